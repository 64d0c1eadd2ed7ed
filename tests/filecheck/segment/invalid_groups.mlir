// A hand-written schedule with badly formed groups (runs of blocks with their own
// sub-batch size) is rejected with the rule it breaks.
// RUN: %crane-opt %s --split-input-file --verify-diagnostics

// A group's blocks run on a proper divisor of the batch.
segment.schedule ({
  // expected-error@+1 {{a group's 4 samples must be a proper divisor of the batch of 4}}
  segment.block {layers = ["a"], subbatch = 2, subbatches = 2, shape = array<i64: 1, 1>, workloads = array<i64: 2>, sct = array<i64: 2>, met_dram = array<i64: 2>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{a group's 3 samples must be a proper divisor of the batch of 4}}
  segment.block {layers = ["a"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// -----

// Only forward blocks are grouped.
segment.schedule ({
  segment.block {layers = ["a"], subbatch = 4, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
  // expected-error@+1 {{only forward blocks can be grouped, not a bw1 block}}
  segment.block {layers = ["a.grad"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, phase = "bw1", group = 0} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// -----

// The blocks of a group are consecutive ...
segment.schedule ({
  segment.block {layers = ["a"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
  segment.block {layers = ["b"], subbatch = 4, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>} : () -> ()
  // expected-error@+1 {{the blocks of group 0 are not consecutive}}
  segment.block {layers = ["c"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()

// -----

// ... and share one size.
segment.schedule ({
  segment.block {layers = ["a"], subbatch = 2, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
  // expected-error@+1 {{the blocks of group 0 process 2 and 1 samples per run; a group has one size}}
  segment.block {layers = ["b"], subbatch = 1, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 16>, fused = array<i64: 0>, group = 0} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 4} : () -> ()
