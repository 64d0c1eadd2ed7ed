// A hand-written schedule that breaks one table constraint is rejected, naming the
// constraint, the block, the state and the column (0-based).
// RUN: %crane-opt %s --split-input-file --verify-diagnostics

// The paper's two-layer example (three sub-batches, fused producer) is valid.
segment.schedule ({
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{'segment.block' op violates ScT.accumulation(Eq.6) in block 'a..b', state 1, column 1: 1 != 0 + workload 2}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 1, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 1, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{violates ScT.complete(Eq.3) in block 'a..b', state 2, column 1: 2 done, expected all 3}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 0>, sct = array<i64: 1, 0, 3, 2, 3, 2>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 2, 2>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

// Column 1 catches up with its producer inside state 1.
segment.schedule ({
  // expected-error@+1 {{violates ScT.dependency(Eq.5) in block 'a..c', state 1, column 1: consumer at 1 not behind producer 0 at 1}}
  segment.block {layers = ["a", "b", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 5, 3>, workloads = array<i64: 0, 1, 2, 0, 1>, sct = array<i64: 0, 0, 0, 1, 1, 0, 3, 3, 2, 3, 3, 2, 3, 3, 3>, met_dram = array<i64: 0, 0, 0, 1, 1, 0, 3, 3, 2, 3, 3, 2, 3, 3, 3>, met_sram = array<i64: 0, 0, 0, 1, 0, 0, 3, 2, 2, 3, 2, 2, 3, 3, 3>, deps = array<i64: 0, 1, 1, 2>, tiles = array<i64: 0, 0, 0, 8, 8, 0, 6, 5, 5, 0, 8, 8, 0, 0, 16>, fused = array<i64: 1, 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{violates MeT.below_sct(Eq.9) in block 'a..b', state 1, column 1: sram bound 3 above ScT 2}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 3, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

// The producer dropped sub-batch 1 from SRAM before its consumer read it.
segment.schedule ({
  // expected-error@+1 {{violates MeT.input_available(Eq.10) in block 'a..b', state 1, column 1: producer 0 kept only (1, ...] but consumer is at 0}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 1, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{violates Tiles.inactive_column in block 'a..b', state 0, column 1: 4 tiles but inactive}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 4, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{'sct' must hold 3 x 2 values, got 5}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{3 sub-batches of 1 do not make the batch of 4}}
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// -----

// A state wants more tiles than the target machine has (edge: 16).
builtin.module attributes {crane.machine = @edge} {
  hw.machine {sym_name = "edge", rows = 4, cols = 4, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 3, 3>} : () -> ()
  segment.schedule ({
    // expected-error@+1 {{violates Tiles.capacity in block 'a..b', state 1: 20 tiles > 16 on the machine}}
    segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 10, 10, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
  }) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// expected-error@+1 {{'segment.schedule' op layer 'b' is scheduled by more than one block}}
segment.schedule ({
  segment.block {layers = ["a", "b"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 16, 0, 8, 8, 0, 16>, fused = array<i64: 1, 0>} : () -> ()
  segment.block {layers = ["b"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()
