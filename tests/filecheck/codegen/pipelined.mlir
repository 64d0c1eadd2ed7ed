// Two convolutions in one block over two tiles: the first column is fused (its output
// stays in SRAM), so the second receives it over the NoC, in the same state and a state
// later. Each layer is split as the cost model splits it (here by output columns, so
// parts read halos); a weight slice both tiles read comes from DRAM once and is sent on;
// the relu runs in place on the convolution's buffer; windowed sends and receives move
// a box of a buffer (halos, joins) without copies, and a compute reads a box of a buffer
// in place (an input window: tile 0's last convolution reads its halo'd columns of the
// relu's buffer); a state fetches every column's first
// operands before it computes (so tile 1's input leaves tile 0 before tile 0's own
// convolution); every state ends with a barrier of both tiles labelled with its block
// and state; buffers count their bytes at the machine's element width (one byte on edge);
// each tile loads and stores through the DRAM port nearest to it (tile 0: port 0, tile 1:
// port 1), whichever port the block's table names for the column.
// RUN: %crane-opt %s -p 'codegen{emit=listing output=%t}' -o /dev/null
// RUN: filecheck %s --input-file=%t --check-prefix=LIST
// RUN: %crane-opt %s -p codegen | filecheck %s --check-prefix=IR

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

// LIST:      # tile 0 (row 0, col 0): 23 instructions
// LIST-NEXT: alloc   b0 1x3x8x5 f32 120B @-1
// LIST-NEXT: load    b0 <- x[0, 0, 0, 0] port 0
// LIST-NEXT: alloc   b1 4x3x3x3 f32 108B @-1
// LIST-NEXT: load    b1 <- conv2d.weight[0, 0, 0, 0] port 0
// LIST-NEXT: send    b1 -> tile 1 tag 1
// LIST-NEXT: alloc   b2 1x4x8x4 f32 128B @-1
// LIST-NEXT: compute conv2d b2 <- b0, b1 {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 0>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, bias = false}
// LIST-NEXT: compute relu b2 <- b2 {}
// LIST-NEXT: barrier 0 tiles 0, 1  # conv2d..y:state0
// LIST:      load    b3 <- x[1, 0, 0, 0] port 0
// LIST-NEXT: send    b2 -> tile 1 tag 2
// LIST:      compute relu b4 <- b4 {}
// LIST-NEXT: barrier 1 tiles 0, 1  # conv2d..y:state1
// LIST:      send    b4[0, 0, 0, 3] 1x4x8x5 -> tile 1 tag 3
// LIST:      compute conv2d b6 <- b4[0, 0, 0, 0] 1x4x8x5, b5 {out = 4
// LIST-NEXT: store   b6 -> y[1, 0, 0, 0] port 0
// LIST-NEXT: barrier 2 tiles 0, 1  # conv2d..y:state2
// LIST-NEXT: # tile 1 (row 0, col 1): 24 instructions
// LIST-NEXT: alloc   b0 1x3x8x5 f32 120B @-1
// LIST-NEXT: load    b0 <- x[0, 0, 0, 3] port 1
// LIST-NEXT: alloc   b1 4x3x3x3 f32 108B @-1
// LIST-NEXT: recv    b1 <- tile 0 tag 1
// LIST:      barrier 0 tiles 0, 1  # conv2d..y:state0
// LIST-NEXT: alloc   b3 1x4x8x8 f32 256B @-1
// LIST-NEXT: recv    b3[0, 0, 0, 0] 1x4x8x4 <- tile 0 tag 2
// LIST-NEXT: copy    b3[0, 0, 0, 4] <- b2[0, 0, 0, 0] 1x4x8x4
// LIST:      store   b5 -> y[0, 0, 0, 0] port 1
// LIST-NEXT: barrier 1 tiles 0, 1  # conv2d..y:state1
// LIST:      recv    b6 <- tile 0 tag 3
// LIST:      store   b7 -> y[1, 0, 0, 4] port 1
// LIST-NEXT: barrier 2 tiles 0, 1  # conv2d..y:state2
// LIST-NOT:  tile

// IR:      graph.func @pair(
// IR:      segment.schedule
// IR-NEXT:   segment.block
// IR-NEXT: })
// IR-NEXT: tile.dram {name = "x", shape = array<i64: 2, 3, 8, 8>, dtype = "f32", role = "input"} : () -> ()
// IR-NEXT: tile.dram {name = "conv2d.weight", shape = array<i64: 4, 3, 3, 3>, dtype = "f32", role = "weight"} : () -> ()
// IR-NEXT: tile.dram {name = "y.weight", shape = array<i64: 4, 4, 3, 3>, dtype = "f32", role = "weight"} : () -> ()
// IR-NEXT: tile.dram {name = "y", shape = array<i64: 2, 4, 8, 8>, dtype = "f32", role = "output"} : () -> ()
// IR-NEXT: tile.program ({
// IR-NEXT:   %{{.*}} = tile.alloc {offset = -1, bytes = 120} : () -> buffer<1x3x8x5xf32, sram>
// IR:        tile.send %{{.*}} {peer = 1, tag = 1} : (buffer<4x3x3x3xf32, sram>) -> ()
// IR:        tile.barrier {id = 0, tiles = array<i64: 0, 1>, label = "conv2d..y:state0"} : () -> ()
// IR:        tile.send %{{.*}} {peer = 1, tag = 3, offsets = array<i64: 0, 0, 0, 3>, shape = array<i64: 1, 4, 8, 5>} : (buffer<1x4x8x8xf32, sram>) -> ()
// IR:        tile.compute %{{.*}}, %{{.*}}, %{{.*}} {op = "conv2d", {{.*}}in_windows = [array<i64: 0, 0, 0, 0, 1, 4, 8, 5>, array<i64>]} : (buffer<1x4x8x4xf32, sram>, buffer<1x4x8x8xf32, sram>, buffer<4x4x3x3xf32, sram>) -> ()
// IR:      }) {tile = 0, row = 0, col = 0} : () -> ()
// IR-NEXT: tile.program ({
// IR:        tile.recv %{{.*}} {peer = 0, tag = 2, offsets = array<i64: 0, 0, 0, 0>, shape = array<i64: 1, 4, 8, 4>} : (buffer<1x4x8x8xf32, sram>) -> ()
// IR:        tile.store %{{.*}} {tensor = "y", offsets = array<i64: 1, 0, 0, 4>, port = 1, accumulate = false} : (buffer<1x4x8x4xf32, sram>) -> ()
// IR:      }) {tile = 1, row = 0, col = 1} : () -> ()
