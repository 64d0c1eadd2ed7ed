// The two sub-batches fit a 10000-byte SRAM only single-buffered (8 KiB live at once; with
// x1 loaded during relu 0 it would be 12 KiB): alloc falls back to single buffering for
// that tile instead of failing, and says so.
// RUN: %crane-opt %s -p alloc | filecheck %s
// RUN: %crane-opt %s -p alloc --pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

builtin.module @fb attributes {crane.machine = @m} {
  hw.machine {sym_name = "m", rows = 1, cols = 2, macs_per_cycle = 1024, sram_bytes = 10000, frequency_hz = 1000000000.0, data_bytes = 1, noc_bandwidth = 16000000000.0, noc_hop_pj_per_byte = 5.6, dram_bandwidth = 64000000000.0, dram_pj_per_byte = 60.0, mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, vector_lanes = 8, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0, 0, 1>} : () -> ()
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

// CHECK:      builtin.module @fb attributes {crane.machine = @m, crane.alloc = {tiles = 2, peak_bytes_max = 8192, peak_bytes_mean = 6144.0, fragmentation_max = 0.0, fragmentation_mean = 0.0, single_buffered_tiles = 1}} {
// CHECK:        %x0 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// CHECK-NEXT:   %y0 = tile.alloc {offset = 4096} : () -> buffer<32x32xf32, sram>
// CHECK:        %x1 = tile.alloc {offset = 0} : () -> buffer<32x32xf32, sram>
// CHECK-NEXT:   %y1 = tile.alloc {offset = 4096} : () -> buffer<32x32xf32, sram>
// STATS:      (S) 1 single-buffered-programs
