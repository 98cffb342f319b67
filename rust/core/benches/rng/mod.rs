//! Deterministic data for the benches: a seeded xorshift, so every run measures the
//! same input without a random-number dependency.

/// Marsaglia's 64-bit xorshift (13, 7, 17).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
}
