// An alignment that is not a power of two is a usage error located in the pipeline text
// (exit status 2), not a crash and not an error blamed on the input.
// RUN: not %crane-opt %s -p 'alloc{alignment=0}' 2>&1 | filecheck %s
// RUN: not %crane-opt %s -p 'alloc{alignment=3}' 2>&1 | filecheck %s --check-prefix=THREE
// RUN: not %crane-opt %s -p 'alloc{alignment=x}' 2>&1 | filecheck %s --check-prefix=TYPE

// CHECK: <pass-pipeline>:1:17: error: option 'alignment' of pass 'alloc' expects a power of two from 1 to 1048576, got '0'
// CHECK-NOT: Traceback
// THREE: <pass-pipeline>:1:17: error: option 'alignment' of pass 'alloc' expects a power of two from 1 to 1048576, got '3'
// TYPE: <pass-pipeline>:1:17: error: {{.*}}alignment
builtin.module @a {
}
