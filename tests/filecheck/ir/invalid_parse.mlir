// Parse errors, each at the token that causes it.
// RUN: %crane-opt %s --split-input-file --verify-diagnostics

test.func @undefined(%a: i32) -> i32 {
  // expected-error@+1 {{use of undefined value '%undef'}}
  %s = test.addi %a, %undef : i32
  test.return %s : i32
}

// -----

test.func @redefinition(%a: i32) -> i32 {
  %s = test.addi %a, %a : i32
  // expected-error@+1 {{redefinition of SSA value '%s'}}
  %s = test.addi %a, %a : i32
  test.return %s : i32
}

// -----

test.func @type_mismatch(%a: i32) -> i32 {
  // expected-error@+1 {{use of value '%a' expects type i64, but it has type i32}}
  %s = test.addi %a, %a : i64
  test.return %s : i32
}

// -----

// expected-error@+1 {{unknown type 'f33'; did you mean 'f32'?}}
test.func @unknown_type(%a: f33) -> i32 {
  test.return %a : i32
}

// -----

test.func @unknown_op(%a: i32) -> i32 {
  // expected-error@+1 {{unregistered operation 'test.add'; did you mean 'test.addi'?}}
  %s = test.add %a, %a : i32
  test.return %s : i32
}

// -----

// expected-error@+1 {{unregistered operation 'foo.bar' (use --allow-unregistered-dialect to accept it)}}
%x = "foo.bar"() : () -> i32

// -----

// expected-error@+1 {{unregistered operation 'foo.bar'}}
%x = foo.bar : i32

// -----

// expected-error@+1 {{expected ']' to close the array, found '}'}}
"test.effect"() {a = [1, 2} : () -> ()

// -----

// expected-error@+1 {{expected an integer, found 'a'}}
"test.effect"() {a = array<i64: 1, a>} : () -> ()

// -----

// expected-error@+1 {{unknown memory space 'l2' (expected sram or dram)}}
"test.effect"() {a = buffer<3xf32, l2>} : () -> ()

// -----

// expected-error@+1 {{expected ',' or '}' in an attribute dictionary}}
"test.effect"() {a = 1 b = 2} : () -> ()

// -----

// expected-error@+1 {{'reed' is not a case of #test.kind; did you mean 'read'?}}
"test.effect"() {kind = #test.kind<reed>} : () -> ()

// -----

// expected-error@+1 {{'bogus' is not a case of #test.kind (expected one of read, write, none)}}
"test.effect"() {kind = #test.kind<bogus>} : () -> ()

// -----

// expected-error@+1 {{'test.constant' produces 1 result(s) but 2 name(s) were given}}
%a, %b = test.constant 1 : i32

// -----

// expected-error@+1 {{'test.constant' produces 2 result(s) but 1 name(s) were given}}
%a = "test.constant"() {value = 1} : () -> (i32, i32)

// -----

test.func @unterminated(%a: i32) -> i32 {
  test.return %a : i32
// expected-error@+1 {{unexpected end of input: expected '}' to close the region}}
