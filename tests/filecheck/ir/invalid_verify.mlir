// Verifier errors, each pointing at the offending op (notes at the related op).
// RUN: %crane-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{'test.positive' op requires a positive 'value', got 0}}
%p = test.positive {value = 0} : () -> i32

// -----

// expected-error@+1 {{'test.positive' op requires a positive 'value', got -3}}
%p = "test.positive"() {value = -3} : () -> i32

// -----

test.func @missing_terminator(%a: i32) -> i32 {
  // expected-error@+1 {{must be followed by a terminator}}
  %s = test.addi %a, %a : i32
}

// -----

test.func @terminator_not_last(%a: i32) -> i32 {
  // expected-error@+1 {{'test.return' op must be the last operation in its block}}
  test.return %a : i32
  // expected-error@+1 {{must be followed by a terminator}}
  %s = test.addi %a, %a : i32
}

// -----

test.func @return_type(%a: i32) -> i32 {
  %s = test.constant 1 : i64
  // expected-error@+1 {{'test.return' op returns (i64) but the function returns (i32)}}
  test.return %s : i64
}

// -----

test.func @return_count(%a: i32) -> i32 {
  // expected-error@+1 {{'test.return' op returns () but the function returns (i32)}}
  test.return
}

// -----

// expected-error@+1 {{'test.return' op expects parent op 'test.func'}}
test.return

// -----

test.func @wrong_parent(%a: i32) {
  test.region ({
    // expected-error@+1 {{'test.return' op expects parent op 'test.func'}}
    test.return
  }) : () -> ()
  test.return
}

// -----

test.func @use_before_def(%a: i32) -> i32 {
  // expected-error@+1 {{'test.addi' op operand #0 does not dominate this use: it is defined later, by 'test.addi'}}
  %s = test.addi %t, %a : i32
  %t = test.addi %a, %a : i32
  test.return %s : i32
}

// -----

// A function is isolated from above: the outer %a is not visible inside @inner.
test.func @outer(%a: i32) -> i32 {
  test.func @inner() -> i32 {
    // expected-error@+1 {{use of undefined value '%a'}}
    test.return %a : i32
  }
  test.return %a : i32
}

// -----

// expected-note@+1 {{the first definition is here}}
test.func @dup() {
  test.return
}
// expected-error@+1 {{'test.func' op redefines symbol '@dup'}}
test.func @dup() {
  test.return
}

// -----

%a = "test.constant"() {value = 1} : () -> i32
// expected-error@+1 {{'test.addi' op expected 2 operand(s), found 1}}
%s = "test.addi"(%a) : (i32) -> i32

// -----

%a = "test.constant"() {value = 1} : () -> i32
// expected-error@+1 {{'test.addi' op expected 2 operand(s), found 3}}
%s = "test.addi"(%a, %a, %a) : (i32, i32, i32) -> i32

// -----

// expected-error@+1 {{'test.constant' op requires attribute 'value'}}
%a = "test.constant"() : () -> i32

// -----

// expected-error@+1 {{'test.constant' op attribute 'value' must be IntAttr, got "x"}}
%a = "test.constant"() {value = "x"} : () -> i32

// -----

%a = test.constant 1 : i32
%b = test.constant 2 : i64
// expected-error@+1 {{'test.addi' op requires the same type for all operands and results}}
%s = "test.addi"(%a, %b) : (i32, i64) -> i32

// -----

// expected-error@+1 {{'test.region' op expected 1 region(s), found 2}}
"test.region"() ({
}, {
}) : () -> ()

// -----

// expected-error@+1 {{entry block arguments do not match the function type}}
"test.func"() ({
^bb0(%x: i32):
  "test.return"() : () -> ()
}) {sym_name = "sig", function_type = (f32) -> ()} : () -> ()
