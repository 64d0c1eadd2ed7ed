// A schedule written by hand prints back unchanged and survives a second round trip.
// RUN: %crane-opt %s | %crane-opt | filecheck %s

segment.schedule ({
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>, latency_cycles = 1500.0, energy_pj = 2.5e6} : () -> ()
  segment.block {layers = ["c"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// CHECK:      segment.schedule ({
// CHECK-NEXT:   segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>, latency_cycles = 1500.0, energy_pj = 2500000.0} : () -> ()
// CHECK-NEXT:   segment.block {layers = ["c"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
// CHECK-NEXT: }) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()
