// Buffers that do not fit the tile's SRAM (6000 bytes): the error sits at the tile.program,
// with notes at the instruction where it fails, at every buffer live there, and (without a
// location) on what the buffers would take at the machine's 1-byte elements.
// RUN: %crane-opt %s -p alloc --split-input-file --verify-diagnostics

// relu reads x (4096 B) and writes y (4096 B) at once.
builtin.module @o attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 6000, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 16000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 64000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 8, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 32, 32>, dtype = "f32", role = "input"} : () -> ()
  // expected-note@unknown {{at the machine's 1-byte elements these buffers would take 2,048 bytes; the IR's element types size them here}}
  // expected-error@+1 {{tile 0 runs out of SRAM at instruction 4: needs 2,192 bytes more than the SRAM holds; 8,192 bytes live of 6,000: %x (4,096 B), %y (4,096 B) ('tile.compute')}}
  tile.program ({
    %small = tile.alloc {offset = -1} : () -> buffer<4xf32, sram>
    // expected-note@+1 {{%x (4,096 bytes) is live from instruction 3 to 4}}
    %x = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    // expected-note@+1 {{%y (4,096 bytes) is live from instruction 4 to 5}}
    %y = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    tile.load %x {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<32x32xf32, sram>) -> ()
    // expected-note@+1 {{tile 0 runs out of SRAM here}}
    tile.compute %y, %x {op = "relu", attrs = {}} : (buffer<32x32xf32, sram>, buffer<32x32xf32, sram>) -> ()
    tile.send %y {peer = 1, tag = 0} : (buffer<32x32xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  tile.program ({
    %r = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    tile.recv %r {peer = 0, tag = 0} : (buffer<32x32xf32, sram>) -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
}

// -----

// One error for all the tiles that overflow, at the first, with a note counting the others; a
// single buffer larger than the SRAM fails where it is first used.
builtin.module @o attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 6000, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 16000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 64000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 8, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 64, 32>, dtype = "f32", role = "input"} : () -> ()
  // expected-note@unknown {{at the machine's 1-byte elements these buffers would take 2,048 bytes; the IR's element types size them here}}
  // expected-error@+1 {{tile 0 runs out of SRAM at instruction 1: needs 2,192 bytes more than the SRAM holds; 8,192 bytes live of 6,000: %big (8,192 B) ('tile.load')}}
  tile.program ({
    // expected-note@+1 {{%big (8,192 bytes) is live from instruction 1 to 1}}
    %big = tile.alloc {offset = -1} : () -> buffer<64x32xf32, sram>
    // expected-note@+1 {{tile 0 runs out of SRAM here}}
    tile.load %big {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<64x32xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  // expected-note@unknown {{1 more tile runs out of SRAM too (1)}}
  tile.program ({
    %a = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    %b = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    tile.load %a {tensor = "x", offsets = array<i64: 0, 0>, port = 1} : (buffer<32x32xf32, sram>) -> ()
    tile.compute %b, %a {op = "relu", attrs = {}} : (buffer<32x32xf32, sram>, buffer<32x32xf32, sram>) -> ()
    tile.store %b {tensor = "x", offsets = array<i64: 32, 0>, port = 1} : (buffer<32x32xf32, sram>) -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
}
