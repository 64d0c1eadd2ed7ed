test.func @f(%x: i32) -> i32 {
  %a = demo.scale %x {factor = 3} : i32
  %b = demo.scale %a {factor = 10} : i32
  test.return %b : i32
}
