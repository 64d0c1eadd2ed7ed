// A non-positive alignment is an error at the module, not a crash.
// RUN: not %crane-opt %s -p 'alloc{alignment=0}' 2>&1 | filecheck %s
// RUN: not %crane-opt %s -p 'alloc{alignment=x}' 2>&1 | filecheck %s --check-prefix=TYPE

// CHECK: bad_alignment.mlir:8:1: error: alignment must be a positive number of bytes, got 0
// CHECK-NOT: Traceback
// TYPE: error: {{.*}}alignment
builtin.module @a {
}
