// map places a hand-written two-layer schedule on the 2x2 machine: every (state, layer)
// gets as many tiles as 'tiles' says, as a contiguous snake run, and the nearest DRAM
// port; the Z3 search (search=z3) can only improve the hop-bytes, and a second run checks
// the first one's mapping and keeps it.
// RUN: %crane-opt %s -p map | filecheck %s
// RUN: %crane-opt %s -p map | %crane-opt -p map | filecheck %s
// RUN: %crane-opt %s -p 'map{search=z3 timeout=2}' | filecheck %s --check-prefix=Z3
// RUN: %crane-opt %s -p map --pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

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
    segment.block {layers = ["a", "c"], subbatch = 1, subbatches = 3, shape = array<i64: 3, 2>, workloads = array<i64: 1, 2, 1>, sct = array<i64: 1, 0, 3, 2, 3, 3>, met_dram = array<i64: 1, 0, 3, 0, 3, 0>, met_sram = array<i64: 0, 0, 2, 2, 3, 3>, deps = array<i64: 0, 1>, tiles = array<i64: 4, 0, 2, 2, 0, 4>, fused = array<i64: 1, 0>} : () -> ()
  }) {func = @two, policy = "crane", objective = "edp", batch = 3} : () -> ()
}

// CHECK:      segment.block {layers = ["a", "c"]
// CHECK-SAME: placement = [array<i64: 0, 1, 3, 2>, array<i64>, array<i64: 0, 1>, array<i64: 3, 2>, array<i64>, array<i64: 0, 1, 3, 2>], ports = array<i64: 0, -1, 0, 1, -1, 0>} : () -> ()

// Z3:      segment.block {layers = ["a", "c"]
// Z3-SAME: placement = [array<i64: {{[0-3], [0-3], [0-3], [0-3]}}>, array<i64>, array<i64: {{[0-3], [0-3]}}>, array<i64: {{[0-3], [0-3]}}>, array<i64>, array<i64: {{[0-3], [0-3], [0-3], [0-3]}}>], ports = array<i64: {{[0-3]}}, -1, {{[0-3], [0-3]}}, -1, {{[0-3]}}>}

// STATS:      map
// STATS-DAG:  1 blocks-placed
// STATS-DAG:  {{[0-9]+}} hop-bytes
// STATS-DAG:  0 violations
