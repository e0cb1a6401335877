//! The helpers compiled code calls, one row per helper: its symbol, its address, its
//! signature and what it does (the text `sentinel ir` notes on each call). Adding a helper is a
//! variant, its row here and its `extern "C"` function in `abi`.

use super::abi;
use cranelift::prelude::{AbiParam, Signature, Type, types};
use cranelift_jit::JITModule;
use cranelift_module::Module;

/// A helper compiled code calls (see `abi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Helper {
    Generic,
    Scalar,
    Box,
    Truth,
    BytesEq,
    RangeLen,
    RangeItem,
    ListNew,
    ListPush,
    ListFinish,
    ScopeMark,
    ScopeRelease,
}

/// An argument or result of a helper, as Cranelift types it.
#[derive(Clone, Copy)]
enum Arg {
    /// A pointer (the context, a boxed value, an out slot, an error).
    Ptr,
    I64,
    I8,
}

/// One helper: everything compiled code and `sentinel ir` need to know of it.
pub(crate) struct HelperDef {
    /// The symbol registered with the JIT and named in the IR.
    pub symbol: &'static str,
    /// The `extern "C"` function's address.
    pub address: *const u8,
    params: &'static [Arg],
    ret: Option<Arg>,
    /// What the helper does, for the note on each call.
    pub text: &'static str,
}

use Arg::{I8, I64, Ptr};

impl Helper {
    /// Every helper, in declaration order.
    pub(crate) const ALL: [Helper; 12] = [
        Helper::Generic,
        Helper::Scalar,
        Helper::Box,
        Helper::Truth,
        Helper::BytesEq,
        Helper::RangeLen,
        Helper::RangeItem,
        Helper::ListNew,
        Helper::ListPush,
        Helper::ListFinish,
        Helper::ScopeMark,
        Helper::ScopeRelease,
    ];

    /// The helper's row.
    pub(crate) fn def(self) -> HelperDef {
        let (symbol, address, params, ret, text): (_, *const u8, &'static [Arg], _, _) = match self
        {
            Helper::Generic => (
                "sentinel_jit_generic",
                abi::jit_generic as *const u8,
                &[Ptr, I64, Ptr, Ptr],
                Some(Ptr),
                "evaluates an operation with the interpreter's functions",
            ),
            Helper::Scalar => (
                "sentinel_jit_scalar",
                abi::jit_scalar as *const u8,
                &[Ptr, I64, I64, I64, I64, I64, Ptr],
                Some(Ptr),
                "the slow path of native arithmetic",
            ),
            Helper::Box => (
                "sentinel_jit_box",
                abi::jit_box as *const u8,
                &[Ptr, I64, I64, I64],
                Some(Ptr),
                "boxes a scalar as a CEL value",
            ),
            Helper::Truth => (
                "sentinel_jit_truth",
                abi::jit_truth as *const u8,
                &[Ptr],
                Some(I8),
                "reads a dyn value as bool",
            ),
            Helper::BytesEq => (
                "sentinel_jit_bytes_eq",
                abi::jit_bytes_eq as *const u8,
                &[Ptr, I64, Ptr, I64],
                Some(I8),
                "compares string bytes",
            ),
            Helper::RangeLen => (
                "sentinel_jit_range_len",
                abi::jit_range_len as *const u8,
                &[Ptr],
                Some(I64),
                "the length of a macro's range",
            ),
            Helper::RangeItem => (
                "sentinel_jit_range_item",
                abi::jit_range_item as *const u8,
                &[Ptr, Ptr, I64, I64, Ptr],
                Some(Ptr),
                "the next element of a macro's range",
            ),
            Helper::ListNew => (
                "sentinel_jit_list_new",
                abi::jit_list_new as *const u8,
                &[Ptr],
                Some(I64),
                "starts a list",
            ),
            Helper::ListPush => (
                "sentinel_jit_list_push",
                abi::jit_list_push as *const u8,
                &[Ptr, I64, Ptr],
                Some(Ptr),
                "appends to a list",
            ),
            Helper::ListFinish => (
                "sentinel_jit_list_finish",
                abi::jit_list_finish as *const u8,
                &[Ptr, I64],
                Some(Ptr),
                "finishes a list",
            ),
            Helper::ScopeMark => (
                "sentinel_jit_scope_mark",
                abi::jit_scope_mark as *const u8,
                &[Ptr],
                Some(I64),
                "marks the values a macro's element starts from",
            ),
            Helper::ScopeRelease => (
                "sentinel_jit_scope_release",
                abi::jit_scope_release as *const u8,
                &[Ptr, I64],
                None,
                "drops the values of a macro's element",
            ),
        };
        HelperDef {
            symbol,
            address,
            params,
            ret,
            text,
        }
    }

    /// The symbol registered for the helper.
    pub(crate) fn symbol(self) -> &'static str {
        self.def().symbol
    }

    /// The helper's signature, matching its `extern "C"` definition.
    pub(crate) fn signature(self, module: &JITModule) -> Signature {
        let ptr = module.target_config().pointer_type();
        let ty = |a: &Arg| -> Type {
            match a {
                Ptr => ptr,
                I64 => types::I64,
                I8 => types::I8,
            }
        };
        let def = self.def();
        let mut sig = module.make_signature();
        sig.params
            .extend(def.params.iter().map(|a| AbiParam::new(ty(a))));
        sig.returns
            .extend(def.ret.iter().map(|a| AbiParam::new(ty(a))));
        sig
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_helper_is_listed_once_with_its_own_symbol() {
        for (i, h) in Helper::ALL.iter().enumerate() {
            assert_eq!(*h as usize, i, "{h:?} out of order in Helper::ALL");
        }
        let mut symbols: Vec<_> = Helper::ALL.iter().map(|h| h.symbol()).collect();
        symbols.sort_unstable();
        symbols.dedup();
        assert_eq!(symbols.len(), Helper::ALL.len());
        let mut addresses: Vec<_> = Helper::ALL.iter().map(|h| h.def().address).collect();
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), Helper::ALL.len());
    }
}
