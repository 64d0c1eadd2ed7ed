// A three-stage pipeline over a 1x3 mesh, two chunks of the batch in flight: tile 0 loads
// and applies relu, tile 1 sigmoid, tile 2 stores; values travel by send/recv with tags.
// crane-sim --check compares it with sigmoid(relu(x)) run by the reference interpreter
// (tests/unit/tile_sim). Here: it verifies and round-trips.
// RUN: %crane-opt %s | %crane-opt | filecheck %s

builtin.module @pipe attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 3, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 2>} : () -> ()
  graph.func @pipe(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {batch = 4} {
    %r = graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %z = graph.sigmoid %r : (tensor<4x8xf32>) -> tensor<4x8xf32>
    graph.return %z : tensor<4x8xf32>
  }
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.dram {name = "z", shape = array<i64: 4, 8>, dtype = "f32", role = "output"} : () -> ()
  tile.program ({
    %a = tile.alloc {offset = 0} : () -> buffer<2x8xf32, sram>
    %b = tile.alloc {offset = 64} : () -> buffer<2x8xf32, sram>
    tile.load %a {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.compute %a, %a {op = "relu", attrs = {}} : (buffer<2x8xf32, sram>, buffer<2x8xf32, sram>) -> ()
    tile.load %b {tensor = "x", offsets = array<i64: 2, 0>, port = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.send %a {peer = 1, tag = 0, route = array<i64: 0, 1>} : (buffer<2x8xf32, sram>) -> ()
    tile.compute %b, %b {op = "relu", attrs = {}} : (buffer<2x8xf32, sram>, buffer<2x8xf32, sram>) -> ()
    tile.send %b {peer = 1, tag = 1} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  tile.program ({
    %in = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    %out = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    tile.recv %in {peer = 0, tag = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.compute %out, %in {op = "sigmoid", attrs = {}} : (buffer<2x8xf32, sram>, buffer<2x8xf32, sram>) -> ()
    tile.send %out {peer = 2, tag = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.recv %in {peer = 0, tag = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.compute %out, %in {op = "sigmoid", attrs = {}} : (buffer<2x8xf32, sram>, buffer<2x8xf32, sram>) -> ()
    tile.send %out {peer = 2, tag = 1} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
  tile.program ({
    %c = tile.alloc {offset = 0} : () -> buffer<2x8xf32, sram>
    tile.recv %c {peer = 1, tag = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.store %c {tensor = "z", offsets = array<i64: 0, 0>, port = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.recv %c {peer = 1, tag = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.store %c {tensor = "z", offsets = array<i64: 2, 0>, port = 1} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 2, row = 0, col = 2} : () -> ()
}

// CHECK: tile.send %a {peer = 1, tag = 0, route = array<i64: 0, 1>} : (buffer<2x8xf32, sram>) -> ()
// CHECK: tile.recv %in {peer = 0, tag = 1} : (buffer<2x8xf32, sram>) -> ()
// CHECK: tile.store %c {tensor = "z", offsets = array<i64: 2, 0>, port = 1} : (buffer<2x8xf32, sram>) -> ()
