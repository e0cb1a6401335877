//! A bump arena whose elements never move: compiled code holds raw pointers to the values and
//! errors of one call.
//!
//! Invariant: an element's address is stable until [`Arena::reset`]; reset drops the elements but
//! keeps every chunk's memory, so steady-state calls do not allocate.

/// A position in an [`Arena`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) chunk: usize,
    pub(crate) len: usize,
}

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

    /// Where the next element goes: [`Arena::truncate`] to it drops every element allocated
    /// since.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            chunk: self.current,
            len: self.chunks.get(self.current).map_or(0, Vec::len),
        }
    }

    /// Drops every element allocated since `mark` (of this arena, not reset since), keeping
    /// the memory; earlier elements keep their addresses.
    pub(crate) fn truncate(&mut self, mark: Mark) {
        let used = (self.current + 1).min(self.chunks.len());
        for chunk in self.chunks.iter_mut().take(used).skip(mark.chunk + 1) {
            chunk.clear();
        }
        if let Some(chunk) = self.chunks.get_mut(mark.chunk) {
            chunk.truncate(mark.len);
        }
        self.current = mark.chunk.min(self.current);
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

    #[test]
    fn truncating_to_a_mark_keeps_what_came_before_and_reuses_the_rest() {
        let mut arena = Arena::default();
        let kept: Vec<*const usize> = (0..40).map(|i| arena.alloc(i)).collect();
        let mark = arena.mark();
        for round in 0..3 {
            for i in 0..1000 {
                arena.alloc(i + round);
            }
            arena.truncate(mark);
            assert_eq!(arena.mark(), mark);
        }
        let chunks = arena.chunks.len();
        let next = arena.alloc(40);
        // SAFETY: the arena has not been reset, and truncation kept the first 40.
        unsafe {
            assert_eq!(*kept[39], 39);
            assert_eq!(*next, 40);
        }
        assert_eq!(kept[39].wrapping_add(1), next.cast_mut().cast_const());
        for i in 0..1000 {
            arena.alloc(i);
        }
        assert_eq!(arena.chunks.len(), chunks, "truncated chunks are reused");
    }
}
