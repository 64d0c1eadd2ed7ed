// Every attribute kind prints back exactly as written, in the custom and the generic form.
// RUN: %crane-opt %s | filecheck %s
// RUN: %crane-opt %s | %crane-opt - | filecheck %s
// RUN: %crane-opt %s --print-op-generic | %crane-opt - | filecheck %s

// CHECK-LABEL: test.func @ints
// CHECK-NEXT:    test.effect {i = 3, w32 = 7 : i32, w8 = -5 : i8, w1 = 1 : i1, huge = 123456789012345678901234567890} : () -> ()
test.func @ints() {
  test.effect {i = 3, w32 = 7 : i32, w8 = -5 : i8, w1 = 1 : i1, huge = 123456789012345678901234567890} : () -> ()
  test.return
}

// CHECK-LABEL: test.func @floats
// CHECK-NEXT:    test.effect {half = 0.5, one = 1.0, tiny = 1e-05, big = 1.5e+20, exp = 100000.0, negzero = -0.0, pinf = inf, ninf = -inf, nan = nan, overflow = inf} : () -> ()
test.func @floats() {
  test.effect {half = 0.5, one = 1.0, tiny = 1e-05, big = 1.5e+20, exp = 1E5, negzero = -0.0, pinf = inf, ninf = -inf, nan = nan, overflow = 1e400} : () -> ()
  test.return
}

// CHECK-LABEL: test.func @bools_strings_units
// CHECK-NEXT:    test.effect {t = true, f = false, s = "a\"b\\c\n\t", empty = "", uni = "héllo ✓", ctl = "\01x", flag, also_flag} : () -> ()
test.func @bools_strings_units() {
  test.effect {t = true, f = false, s = "a\"b\\c\n\t", empty = "", uni = "héllo ✓", ctl = "\01x", flag, also_flag = unit} : () -> ()
  test.return
}

// CHECK-LABEL: test.func @containers
// CHECK-NEXT:    test.effect {arr = [1, "x", [true, []]], none = [], dense = array<i64: 1, -2, 3>, dense0 = array<i64>, dict = {k = 1, flag, "quoted key" = "v", inner = {}}, "quoted key!" = 0, dotted.name_$ = 1} : () -> ()
test.func @containers() {
  test.effect {arr = [1, "x", [true, []]], none = [], dense = array<i64: 1, -2, 3>, dense0 = array<i64>, dict = {k = 1, flag, "quoted key" = "v", inner = {}}, "quoted key!" = 0, dotted.name_$ = 1} : () -> ()
  test.return
}

// CHECK-LABEL: test.func @enums_and_symbols
// CHECK-NEXT:    test.effect {kind = #test.kind<read>, other = [#test.kind<write>, #test.kind<none>], sym = @a, nested = @a::@b, deep = @a::@b::@c, quoted = @"a b"::@c} : () -> ()
test.func @enums_and_symbols() {
  test.effect {kind = #test.kind<read>, other = [#test.kind<write>, #test.kind<none>], sym = @a, nested = @a::@b, deep = @a::@b::@c, quoted = @"a b"::@c} : () -> ()
  test.return
}

// CHECK-LABEL: test.func @type_attrs
// CHECK-NEXT:    test.effect {t = tensor<1x?x3xf32>, r0 = tensor<f32>, z = tensor<0xi8>, buf = buffer<4x4xf16, sram>, dbuf = buffer<8xbf16, dram>, s = index, fn = (i32, f32) -> (i1, index), fn1 = () -> bf16, fn0 = () -> (), nested = (i32) -> ((i32) -> i32)} : () -> ()
test.func @type_attrs() {
  test.effect {t = tensor<1x?x3xf32>, r0 = tensor<f32>, z = tensor<0xi8>, buf = buffer<4x4xf16, sram>, dbuf = buffer<8xbf16, dram>, s = index, fn = (i32, f32) -> (i1, index), fn1 = () -> bf16, fn0 = () -> (), nested = (i32) -> ((i32) -> i32)} : () -> ()
  test.return
}
