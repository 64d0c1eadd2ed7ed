// A schedule with groups (runs of blocks with their own sub-batch size: blocks a and b
// run on samples 0-1, then on samples 2-3; then c on each sample; then d on all four)
// prints back unchanged and survives a second round trip.
// RUN: %crane-opt %s | %crane-opt | filecheck %s

segment.schedule ({
  segment.block {layers = ["a"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
  segment.block {layers = ["b"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
  segment.block {layers = ["c"], subbatch = 1, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 1} : () -> ()
  segment.block {layers = ["d"], subbatch = 4, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// CHECK:      segment.schedule ({
// CHECK-NEXT:   segment.block {layers = ["a"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
// CHECK-NEXT:   segment.block {layers = ["b"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
// CHECK-NEXT:   segment.block {layers = ["c"], subbatch = 1, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 1} : () -> ()
// CHECK-NEXT:   segment.block {layers = ["d"], subbatch = 4, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
// CHECK-NEXT: }) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()
