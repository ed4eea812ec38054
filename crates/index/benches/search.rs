//! Search benchmark (filled in below).
fn main() {}
