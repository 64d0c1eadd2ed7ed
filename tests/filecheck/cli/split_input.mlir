// --split-input-file treats each whole-line marker as the end of an independent input and
// joins the outputs with the marker; a marker inside a line does not split.
// RUN: %crane-opt %s --split-input-file | filecheck %s
// RUN: %crane-opt %s --split-input-file -p canonicalize | filecheck %s --check-prefix=CANON

// CHECK:      builtin.module {
// CHECK-NEXT:   test.func @first() {
// CHECK-NEXT:     test.effect {note = "// ----- is not a marker here"} : () -> ()
// CHECK-NEXT:     test.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: // {{-----}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   test.func @second() -> i32 {
// CHECK:      {{^[}]$}}
// CHECK-NEXT: // {{-----}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   test.func @first() {

// CANON:      test.func @second() -> i32 {
// CANON-NEXT:   %{{.*}} = test.constant 3 : i32

test.func @first() {
  test.effect {note = "// ----- is not a marker here"} : () -> ()
  test.return
}

// -----

test.func @second() -> i32 {
  %a = test.constant 1 : i32
  %b = test.constant 2 : i32
  %s = test.addi %a, %b : i32
  test.return %s : i32
}

// -----

// The same symbol as in the first chunk: chunks are independent.
test.func @first() {
  test.return
}
