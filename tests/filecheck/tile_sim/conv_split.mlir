// A 3x3 conv split by output channels over the two tiles of a 1x2 mesh: each tile loads
// the whole input and half of the kernel, and stores its half of the output channels.
// RUN: %crane-opt %s | %crane-opt | filecheck %s

builtin.module @conv attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  graph.func @conv(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
    %w = graph.weight {name = "w"} : () -> tensor<4x3x3x3xf32>
    %y = graph.conv2d %x, %w {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    graph.return %y : tensor<1x4x8x8xf32>
  }
  tile.dram {name = "x", shape = array<i64: 1, 3, 8, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.dram {name = "w", shape = array<i64: 4, 3, 3, 3>, dtype = "f32", role = "weight"} : () -> ()
  tile.dram {name = "y", shape = array<i64: 1, 4, 8, 8>, dtype = "f32", role = "output"} : () -> ()
  tile.program ({
    %x = tile.alloc {offset = 0} : () -> buffer<1x3x8x8xf32, sram>
    %w = tile.alloc {offset = 768} : () -> buffer<2x3x3x3xf32, sram>
    %y = tile.alloc {offset = 984} : () -> buffer<1x2x8x8xf32, sram>
    tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 0, 0>, port = 0} : (buffer<1x3x8x8xf32, sram>) -> ()
    tile.load %w {tensor = "w", offsets = array<i64: 0, 0, 0, 0>, port = 0} : (buffer<2x3x3x3xf32, sram>) -> ()
    tile.compute %y, %x, %w {op = "conv2d", attrs = {out = 2, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false}} : (buffer<1x2x8x8xf32, sram>, buffer<1x3x8x8xf32, sram>, buffer<2x3x3x3xf32, sram>) -> ()
    tile.store %y {tensor = "y", offsets = array<i64: 0, 0, 0, 0>, port = 0, accumulate = false} : (buffer<1x2x8x8xf32, sram>) -> ()
    tile.barrier {id = 0, tiles = array<i64: 0, 1>} : () -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  tile.program ({
    %x = tile.alloc {offset = -1} : () -> buffer<1x3x8x8xf32, sram>
    %w = tile.alloc {offset = -1} : () -> buffer<2x3x3x3xf32, sram>
    %y = tile.alloc {offset = -1} : () -> buffer<1x2x8x8xf32, sram>
    tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 0, 0>, port = 1} : (buffer<1x3x8x8xf32, sram>) -> ()
    tile.load %w {tensor = "w", offsets = array<i64: 2, 0, 0, 0>, port = 1} : (buffer<2x3x3x3xf32, sram>) -> ()
    tile.compute %y, %x, %w {op = "conv2d", attrs = {out = 2, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false}} : (buffer<1x2x8x8xf32, sram>, buffer<1x3x8x8xf32, sram>, buffer<2x3x3x3xf32, sram>) -> ()
    tile.store %y {tensor = "y", offsets = array<i64: 0, 2, 0, 0>, port = 1, accumulate = false} : (buffer<1x2x8x8xf32, sram>) -> ()
    tile.barrier {id = 0, tiles = array<i64: 0, 1>} : () -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
}

// CHECK: tile.dram {name = "x", shape = array<i64: 1, 3, 8, 8>, dtype = "f32", role = "input"} : () -> ()
// CHECK: tile.program ({
// CHECK-NEXT: %x = tile.alloc {offset = 0} : () -> buffer<1x3x8x8xf32, sram>
// CHECK: tile.compute %y, %x, %w {op = "conv2d", attrs = {out = 2,
// CHECK: tile.store %y {tensor = "y", offsets = array<i64: 0, 2, 0, 0>, port = 1, accumulate = false} : (buffer<1x2x8x8xf32, sram>) -> ()
// CHECK: }) {tile = 1, row = 0, col = 1} : () -> ()
