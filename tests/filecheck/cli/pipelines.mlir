// Pipeline spellings: flat, with spaces after commas, nested, named; --dump-pass-pipeline
// prints the resolved, canonical pipeline to stderr.
// RUN: %crane-opt %s -p cse,dce --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=FLAT
// RUN: %crane-opt %s -p 'cse, dce' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=FLAT
// RUN: %crane-opt %s -p 'builtin.module(test.func(cse, canonicalize))' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=NESTED
// RUN: %crane-opt %s -p cleanup --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=NAMED
// RUN: %crane-opt %s -p cleanup | filecheck %s
// RUN: %crane-opt %s -p 'builtin.module(test.func(canonicalize,cse,dce))' | filecheck %s
// RUN: not %crane-opt %s -p cse,canonicalise 2>&1 | filecheck %s --check-prefix=TYPO

// FLAT: builtin.module(cse,dce)
// NESTED: builtin.module(test.func(cse,canonicalize))
// NAMED: builtin.module(canonicalize,cse,dce)

// CHECK-LABEL: test.func @f(
// CHECK-SAME:      %[[A:.*]]: i32
// CHECK-NEXT:    %[[X:.*]] = test.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[M:.*]] = test.muli %[[X]], %[[X]] : i32
// CHECK-NEXT:    test.return %[[M]] : i32
test.func @f(%a: i32) -> i32 {
  %z = test.constant 0 : i32
  %x = test.addi %a, %a : i32
  %y = test.addi %a, %z : i32
  %y2 = test.addi %y, %a : i32
  %dead = test.muli %a, %a : i32
  %m = test.muli %x, %y2 : i32
  test.return %m : i32
}

// TYPO:      <pass-pipeline>:1:5: error: unknown pass or pipeline 'canonicalise'; did you mean 'canonicalize'?
// TYPO-NEXT: cse,canonicalise
// TYPO-NEXT: {{^    \^~+$}}
