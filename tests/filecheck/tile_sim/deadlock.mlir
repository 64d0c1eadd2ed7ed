// Tiles 0 and 1 each wait to receive before sending, and tile 2 waits at a barrier tile 1
// never reaches: the IR is valid, the functional simulator reports the deadlock with every
// blocked tile and its instruction (tests/unit/tile_sim). Here: it verifies and round-trips.
// RUN: %crane-opt %s | %crane-opt | filecheck %s

builtin.module @stuck attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 3, macs_per_cycle = 1024, sram_bytes = 1048576, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 2>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %a = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    tile.load %a {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<2x8xf32, sram>) -> ()
    tile.recv %a {peer = 1, tag = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.send %a {peer = 1, tag = 2} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    tile.load %b {tensor = "x", offsets = array<i64: 2, 0>, port = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.recv %b {peer = 0, tag = 2} : (buffer<2x8xf32, sram>) -> ()
    tile.send %b {peer = 0, tag = 1} : (buffer<2x8xf32, sram>) -> ()
    tile.barrier {id = 5, tiles = array<i64: 1, 2>} : () -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
  tile.program ({
    tile.barrier {id = 5, tiles = array<i64: 1, 2>} : () -> ()
  }) {tile = 2, row = 0, col = 2} : () -> ()
}

// CHECK: tile.recv %a {peer = 1, tag = 1} : (buffer<2x8xf32, sram>) -> ()
// CHECK: tile.barrier {id = 5, tiles = array<i64: 1, 2>} : () -> ()
