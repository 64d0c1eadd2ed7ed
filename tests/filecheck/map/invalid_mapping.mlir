// A mapping written (or edited) by hand is checked by the map pass, not replaced: each
// rule it breaks is an error at its segment.block naming the constraint, the state, the
// layers and the tiles (from Z3's unsat core). Shapes are checked by the verifier.
// RUN: %crane-opt %s -p map --split-input-file --verify-diagnostics

// A legal hand-written mapping is checked and kept.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// Two layers on one tile in the same state.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{illegal mapping: violates Map.tile_exclusive in block 'a..c', state 1: tile 1 (row 0, col 1) is given to 'a' and 'c'}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 1, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// One layer listing a tile twice.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{illegal mapping: violates Map.tile_exclusive in block 'a..c', state 1: tile 0 (row 0, col 0) is given to 'a' twice}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 0>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// The machine's SRAM edited down: the held activations (one sub-batch of 'a', spread
// over the four tiles) no longer fit.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 32, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+4 {{illegal mapping: violates Map.sram_capacity in block 'a..c', state 0: tile 0 (row 0, col 0) of 'a' needs 64 bytes (resident weights 0, held activations 64) > SRAM 32}}
    // expected-error@+3 {{illegal mapping: violates Map.sram_capacity in block 'a..c', state 1: tile 0 (row 0, col 0) of 'a' needs 64 bytes}}
    // expected-error@+2 {{illegal mapping: violates Map.sram_capacity in block 'a..c', state 1: tile 3 (row 1, col 1) of 'c' needs 64 bytes}}
    // expected-error@+1 {{illegal mapping: violates Map.sram_capacity in block 'a..c', state 2: tile 0 (row 0, col 0) of 'c' needs 64 bytes}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// A tile beyond the 2x2 mesh: neither the producer's routes nor the port reach it.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+2 {{illegal mapping: violates Map.port_reachable in block 'a..c', state 1: tile 6 (row 3, col 0) of 'c' cannot be reached from DRAM port 1 at (1, 0) (no link (1, 0) -> (2, 0))}}
    // expected-error@+1 {{illegal mapping: violates Map.route_valid in block 'a..c', state 1: the XY route from tile 0 (row 0, col 0) of 'a' to tile 6 (row 3, col 0) of 'c' leaves the 2x2 mesh (no link (1, 0) -> (2, 0))}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 6>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// A DRAM port the machine does not have.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{illegal mapping: violates Map.port_reachable in block 'a..c', state 1: 'c' uses DRAM port 4, but the machine has 4 ports (0..3)}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 4, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// Shapes are the verifier's: one tile id per tile the schedule gives.
builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{'segment.block' op 'placement' of state 1, column 0 ('a') lists 1 tiles, 'tiles' gives it 2}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{'ports' of state 0, column 1 ('c') must be -1 exactly when nothing is placed, got 2}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, 2, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

builtin.module @two attributes {crane.machine = @mesh2x2} {
  hw.machine {sym_name = "mesh2x2", rows = 2, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 1, 0, 0, 1, 1, 1>} : () -> ()
  graph.func @two(%image: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %a.weight = graph.weight {name = "a.weight"} : () -> tensor<4x3x3x3xf32>
    %a.bias = graph.weight {name = "a.bias"} : () -> tensor<4xf32>
    %a = graph.conv2d %image, %a.weight, %a.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %b = graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c.weight = graph.weight {name = "c.weight"} : () -> tensor<4x4x3x3xf32>
    %c.bias = graph.weight {name = "c.bias"} : () -> tensor<4xf32>
    %c = graph.conv2d %b, %c.weight, %c.bias {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = true} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    graph.return %c : tensor<1x4x8x8xf32>
  }
  segment.schedule ({
    // expected-error@+1 {{'placement' of state 1, column 0 ('a') has a negative tile id}}
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, -1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// -----

// More tiles than the mesh (edge, as no machine is named) has: nothing can be placed.
segment.schedule ({
  // expected-error@+1 {{cannot place block 'c': state 0 needs 20 tiles, the mesh has 16}}
  segment.block {layers = ["c"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 20>, fused = array<i64: 0>} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()

// -----

segment.schedule ({
  // expected-error@+1 {{'placement' and 'ports' must be given together}}
  segment.block {layers = ["c"], subbatch = 3, subbatches = 1, shape = array<i64: 1, 1>, workloads = array<i64: 1>, sct = array<i64: 1>, met_dram = array<i64: 1>, met_sram = array<i64: 0>, deps = array<i64>, tiles = array<i64: 1>, fused = array<i64: 0>, placement = [array<i64: 0>]} : () -> ()
}) {func = @net, policy = "crane", objective = "edp", batch = 3} : () -> ()
