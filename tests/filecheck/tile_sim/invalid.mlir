// Corrupt tile IR gets a located error naming the broken rule.
// RUN: %crane-opt %s --split-input-file --verify-diagnostics

// A load that reaches past the end of the tensor.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    // expected-error@+1 {{'tile.load' op tensor 'x': dimension 0 reads [3, 5) outside [0, 4)}}
    tile.load %b {tensor = "x", offsets = array<i64: 3, 0>, port = 0} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// A store through a DRAM port the machine does not have.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    // expected-error@+1 {{DRAM port 2 does not exist (the machine has 2)}}
    tile.store %b {tensor = "x", offsets = array<i64: 0, 0>, port = 2} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// A buffer allocated past the end of SRAM.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    // expected-error@+1 {{buffer [1000, 1064) exceeds}}
    %c = tile.alloc {offset = 1000} : () -> buffer<2x8xf32, sram>
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// A send to a tile outside the mesh.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    // expected-error@+1 {{peer 2 is outside the 1 x 2 mesh (tiles 0..1)}}
    tile.send %b {peer = 2, tag = 0} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// A recv from itself.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    // expected-error@+1 {{tile 0 cannot transfer to itself}}
    tile.recv %b {peer = 0, tag = 0} : (buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// An elementwise op whose output does not match its input.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    %c = tile.alloc {offset = -1} : () -> buffer<4x8xf32, sram>
    // expected-error@+1 {{'relu' output buffer is [4, 8], the inputs give [2, 8]}}
    tile.compute %c, %b {op = "relu", attrs = {}} : (buffer<4x8xf32, sram>, buffer<2x8xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}

// -----

// A dtype mismatch between buffer and DRAM tensor.
builtin.module @t attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 1024, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 24000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 16000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 64, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 4, 8>, dtype = "f32", role = "input"} : () -> ()
  tile.program ({
    %b = tile.alloc {offset = -1} : () -> buffer<2x8xf32, sram>
    %c = tile.alloc {offset = -1} : () -> buffer<2x8xf16, sram>
    // expected-error@+1 {{buffer of f16 but DRAM tensor 'x' holds f32}}
    tile.load %c {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<2x8xf16, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
}
