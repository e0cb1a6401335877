//! The helpers of a comprehension's loop: its range's length and elements, the lists `map` and
//! `filter` build, and the scope each element's values live in (dropped at the element's end).

use super::{Boxed, Class, Ctx, NULL_BOX, internal, with_env};
use crate::cel::jit::arena::Mark;
use crate::cel::value::{EvalError, ListBuilder, Value};
use std::sync::Arc;

/// The number of elements a comprehension iterates over (list elements, map keys), or -1 when
/// the range is neither a list nor a map.
pub(crate) extern "C" fn jit_range_len(range: *const Boxed) -> i64 {
    // SAFETY: compiled code passes a live boxed value.
    match unsafe { (*range).value() } {
        Value::List(items) => items.len() as i64,
        Value::Map(map) => map.len() as i64,
        _ => -1,
    }
}

/// Element `i` of a comprehension's range (a map's `i`-th key), into `out` by `class`.
pub(crate) extern "C" fn jit_range_item(
    ctx: *mut Ctx,
    range: *const Boxed,
    i: u64,
    class: u64,
    out: *mut [u64; 2],
) -> *const EvalError {
    // SAFETY: called by compiled code with its own context, a live range and an out slot.
    unsafe {
        with_env(ctx, |env| {
            let item = match (*range).value() {
                Value::List(items) => items.get(i as usize).cloned(),
                // Maps are small (labels); a key by position is a short scan.
                Value::Map(map) => map.iter().nth(i as usize).map(|(k, _)| k.clone()),
                _ => None,
            };
            let item = item.ok_or_else(|| internal("range element out of bounds"));
            env.finish(Class::from_code(class), item, &mut *out)
        })
    }
}

/// Starts a list for `map`/`filter`; returns its handle.
pub(crate) extern "C" fn jit_list_new(ctx: *mut Ctx) -> u64 {
    let mut handle = 0;
    // SAFETY: called by compiled code with its own context.
    unsafe {
        with_env(ctx, |env| {
            let s = &mut *env.scratch;
            if s.lists_used == s.lists.len() {
                s.lists.push(ListBuilder::new());
            }
            handle = s.lists_used as u64;
            s.lists_used += 1;
            std::ptr::null()
        });
    }
    handle
}

/// Appends a boxed value to list `handle`; returns null or the error of a list grown past
/// [`crate::cel::value::MAX_VALUE_BYTES`] (the interpreter's own check).
pub(crate) extern "C" fn jit_list_push(
    ctx: *mut Ctx,
    handle: u64,
    item: *const Boxed,
) -> *const EvalError {
    // SAFETY: called by compiled code with its own context, a handle of this call and a live
    // boxed value.
    unsafe {
        with_env(ctx, |env| {
            let Some(list) = env.scratch.lists.get_mut(handle as usize) else {
                return env.error(internal("unknown list"));
            };
            match list.push((*item).value().clone()) {
                Ok(()) => std::ptr::null(),
                Err(e) => env.error(e),
            }
        })
    }
}

/// The list `handle` as a boxed value.
pub(crate) extern "C" fn jit_list_finish(ctx: *mut Ctx, handle: u64) -> *const Boxed {
    let mut boxed: *const Boxed = &NULL_BOX;
    // SAFETY: called by compiled code with its own context and a handle of this call.
    unsafe {
        with_env(ctx, |env| {
            // Draining keeps the builder's memory for the next list.
            let list = match env.scratch.lists.get_mut(handle as usize) {
                Some(list) => list.finish(),
                None => Value::List(Arc::from(Vec::new())),
            };
            boxed = env.scratch.boxes.alloc(Boxed::new(list));
            std::ptr::null()
        });
    }
    boxed
}

/// The scope a macro's element starts: where the boxed values and the lists of this call stand,
/// for [`jit_scope_release`] at the element's end (`u64::MAX`, releasing nothing, in the
/// unlikely case they do not fit in one word).
pub(crate) extern "C" fn jit_scope_mark(ctx: *mut Ctx) -> u64 {
    let mut packed = u64::MAX;
    // SAFETY: called by compiled code with its own context.
    unsafe {
        with_env(ctx, |env| {
            let s = &*env.scratch;
            let mark = s.boxes.mark();
            if let (Ok(chunk), Ok(lists), Ok(len)) = (
                u16::try_from(mark.chunk),
                u16::try_from(s.lists_used),
                u32::try_from(mark.len),
            ) {
                packed = (u64::from(chunk) << 48) | (u64::from(lists) << 32) | u64::from(len);
            }
            std::ptr::null()
        });
    }
    packed
}

/// Ends a macro's element: drops the boxed values and lists made since [`jit_scope_mark`]
/// gave `packed`. Nothing made in an element outlives it: the fold keeps only scalars and
/// errors (which live apart), and `map`/`filter` push a copy of the element's value.
pub(crate) extern "C" fn jit_scope_release(ctx: *mut Ctx, packed: u64) {
    if packed == u64::MAX {
        return;
    }
    // SAFETY: called by compiled code with its own context, with a mark of this call.
    unsafe {
        with_env(ctx, |env| {
            let s = &mut *env.scratch;
            let lists = ((packed >> 32) & 0xffff) as usize;
            for list in s.lists.iter_mut().take(s.lists_used).skip(lists) {
                list.clear();
            }
            s.lists_used = s.lists_used.min(lists);
            s.boxes.truncate(Mark {
                chunk: (packed >> 48) as usize,
                len: (packed & 0xffff_ffff) as usize,
            });
            std::ptr::null()
        });
    }
}
