//! A bump arena whose elements never move: compiled code holds raw pointers to the values and
//! errors of one call.
//!
//! Invariant: an element's address is stable until [`Arena::reset`]; reset drops the elements but
//! keeps every chunk's memory, so steady-state calls do not allocate.

/// Chunks of fixed capacity, filled in order.
pub(crate) struct Arena<T> {
    chunks: Vec<Vec<T>>,
    current: usize,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            chunks: Vec::new(),
            current: 0,
        }
    }
}

impl<T> Arena<T> {
    const FIRST_CHUNK: usize = 32;

    /// Moves `value` into the arena and returns its stable address.
    pub(crate) fn alloc(&mut self, value: T) -> *const T {
        loop {
            if self.current == self.chunks.len() {
                let cap = self
                    .chunks
                    .last()
                    .map_or(Self::FIRST_CHUNK, |c| c.capacity() * 2);
                self.chunks.push(Vec::with_capacity(cap));
            }
            let chunk = &mut self.chunks[self.current];
            // Pushing within capacity never reallocates, so earlier addresses stay valid.
            if chunk.len() < chunk.capacity() {
                chunk.push(value);
                return chunk.as_ptr().wrapping_add(chunk.len() - 1);
            }
            self.current += 1;
        }
    }

    /// Drops every element, keeping the memory.
    pub(crate) fn reset(&mut self) {
        let used = (self.current + 1).min(self.chunks.len());
        for chunk in &mut self.chunks[..used] {
            chunk.clear();
        }
        self.current = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_stable_and_memory_is_reused() {
        let mut arena = Arena::default();
        let first = arena.alloc(String::from("first"));
        let ptrs: Vec<*const String> = (0..1000).map(|i| arena.alloc(i.to_string())).collect();
        // SAFETY: the arena has not been reset, so every address is live.
        unsafe {
            assert_eq!(*first, "first");
            assert_eq!(*ptrs[999], "999");
        }
        let chunks = arena.chunks.len();
        arena.reset();
        for i in 0..1001 {
            arena.alloc(i.to_string());
        }
        assert_eq!(arena.chunks.len(), chunks);
    }
}
