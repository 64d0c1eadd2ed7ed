// Two sub-batches on tile 0 (load x_k, relu, store y_k; 4096-byte buffers) and a send of
// the last result to tile 1. Double buffering (the default) gives x1 its own bytes, since
// it is loaded while relu 0 still reads x0; without it x1 and y1 reuse step 0's bytes.
// RUN: %crane-opt %s -p alloc | filecheck %s --check-prefix=DOUBLE
// RUN: %crane-opt %s -p alloc | %crane-opt - -p alloc | filecheck %s --check-prefix=DOUBLE
// RUN: %crane-opt %s -p 'alloc{double-buffer=false}' | filecheck %s --check-prefix=SINGLE
// RUN: %crane-opt %s -p 'alloc{alignment=1024}' --pass-statistics 2>&1 | filecheck %s --check-prefix=STATS

builtin.module @db attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 65536, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 16000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 64000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 8, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
  tile.dram {name = "x", shape = array<i64: 64, 32>, dtype = "f32", role = "input"} : () -> ()
  tile.dram {name = "y", shape = array<i64: 64, 32>, dtype = "f32", role = "output"} : () -> ()
  tile.program ({
    %x0 = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    %y0 = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    tile.load %x0 {tensor = "x", offsets = array<i64: 0, 0>, port = 0} : (buffer<32x32xf32, sram>) -> ()
    tile.compute %y0, %x0 {op = "relu", attrs = {}} : (buffer<32x32xf32, sram>, buffer<32x32xf32, sram>) -> ()
    tile.store %y0 {tensor = "y", offsets = array<i64: 0, 0>, port = 0} : (buffer<32x32xf32, sram>) -> ()
    %x1 = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    %y1 = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    tile.load %x1 {tensor = "x", offsets = array<i64: 32, 0>, port = 0} : (buffer<32x32xf32, sram>) -> ()
    tile.compute %y1, %x1 {op = "relu", attrs = {}} : (buffer<32x32xf32, sram>, buffer<32x32xf32, sram>) -> ()
    tile.store %y1 {tensor = "y", offsets = array<i64: 32, 0>, port = 0} : (buffer<32x32xf32, sram>) -> ()
    tile.send %y1 {peer = 1, tag = 1} : (buffer<32x32xf32, sram>) -> ()
  }) {tile = 0, row = 0, col = 0} : () -> ()
  tile.program ({
    %r = tile.alloc {offset = -1} : () -> buffer<32x32xf32, sram>
    %s = tile.alloc {offset = -1} : () -> buffer<2x3xf32, sram>
    tile.recv %r {peer = 0, tag = 1} : (buffer<32x32xf32, sram>) -> ()
  }) {tile = 1, row = 0, col = 1} : () -> ()
}

// DOUBLE:      builtin.module @db attributes {crane.machine = @m, crane.alloc = {tiles = 2, peak_bytes_max = 12288, peak_bytes_mean = 8192.0, fragmentation_max = 0.0, fragmentation_mean = 0.0, single_buffered_tiles = 0}} {
// DOUBLE:        %x0 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// DOUBLE-NEXT:   %y0 = tile.alloc {offset = 4096} : () -> buffer<32x32xf32, sram>
// DOUBLE:        %x1 = tile.alloc {offset = 8192} : () -> buffer<32x32xf32, sram>
// DOUBLE-NEXT:   %y1 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// DOUBLE:        %r = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// DOUBLE-NEXT:   %s = tile.alloc {offset = 0} : () -> buffer<2x3xf32, sram>

// SINGLE:      crane.alloc = {tiles = 2, peak_bytes_max = 8192, peak_bytes_mean = 6144.0, fragmentation_max = 0.0, fragmentation_mean = 0.0, single_buffered_tiles = 0}
// SINGLE:        %x0 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// SINGLE-NEXT:   %y0 = tile.alloc {offset = 4096} : () -> buffer<32x32xf32, sram>
// SINGLE:        %x1 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// SINGLE-NEXT:   %y1 = tile.alloc {offset = 4096} : () -> buffer<32x32xf32, sram>

// STATS:      Pass statistics report
// STATS:      alloc
// STATS-NEXT:   (S) 6 buffers
// STATS-NEXT:   (S) 0 fragmentation-max-permille
// STATS-NEXT:   (S) 0 fragmentation-mean-permille
// STATS-NEXT:   (S) 12288 peak-bytes-max
// STATS-NEXT:   (S) 8192 peak-bytes-mean
// STATS-NEXT:   (S) 2 programs
