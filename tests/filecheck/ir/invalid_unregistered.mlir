// Even with --allow-unregistered-dialect, an unknown op has no custom form.
// RUN: %crane-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics

// expected-error@+1 {{'foo.bar' is not registered, so it has no custom form; write it in the generic form "foo.bar"(...) : (...) -> (...)}}
%x = foo.bar : i32

// -----

test.func @f(%a: i32) {
  // expected-error@+1 {{'foo.baz' is not registered, so it has no custom form}}
  foo.baz %a : i32
  test.return
}

// -----

// The generic form of the same op is fine.
%y = "foo.bar"() : () -> i32
