// A listing or JSON needs a file to go to: a located error, and no programs.
// RUN: %crane-opt %s -p 'codegen{emit=json}' --verify-diagnostics

// expected-error@+1 {{emit=json needs an output file (output=FILE)}}
builtin.module @pair attributes {crane.machine = @pair2} {
  hw.machine {sym_name = "pair2", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  graph.func @pair(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> attributes {batch = 2} {
    %conv2d.weight = graph.weight {name = "conv2d.weight"} : () -> tensor<4x3x3x3xf32>
    %conv2d = graph.conv2d %x, %conv2d.weight {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
    %a = graph.relu %conv2d : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %y.weight = graph.weight {name = "y.weight"} : () -> tensor<4x4x3x3xf32>
    %y = graph.conv2d %a, %y.weight {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    graph.return %y : tensor<2x4x8x8xf32>
  }
  segment.schedule ({
    segment.block {layers = ["conv2d", "y"], subbatch = 1, subbatches = 2, shape = array<i64: 3, 2>, workloads = array<i64: 1, 1, 1>, sct = array<i64: 1, 0, 2, 1, 2, 2>, met_dram = array<i64: 1, 0, 2, 1, 2, 2>, met_sram = array<i64: 0, 0, 0, 0, 0, 0>, deps = array<i64: 0, 1>, tiles = array<i64: 2, 0, 1, 1, 0, 2>, fused = array<i64: 1, 0>, placement = [array<i64: 0, 1>, array<i64>, array<i64: 0>, array<i64: 1>, array<i64>, array<i64: 0, 1>], ports = array<i64: 0, -1, 0, 1, -1, 1>} : () -> ()
  }) {func = @pair, policy = "crane", objective = "edp", batch = 2} : () -> ()
}
