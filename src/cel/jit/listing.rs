//! The listings of a compiled function for `sentinel ir`: its optimized IR and its machine code,
//! line by line, each line tied to the [`Site`] it was lowered from.
//!
//! Takes the function Cranelift compiled (its IR after optimization, with a source location per
//! instruction, and the code buffer, which maps code offsets back to those locations); gives
//! [`BodyListing`]s of plain lines. The machine code is disassembled from the emitted bytes
//! (iced-x86), before relocation: a helper's address is still zero there and the relocation
//! names it, so the text does not depend on where anything was loaded. Boxed constants are
//! embedded by address; their immediates print as `constant #k`.
//!
//! Invariant: a line without a site is frame set-up or tear-down (the prologue, the epilogue,
//! the IR's preamble of declarations) or constant data, never code lowered from the rules.

use super::sites::{NoteKind, Site, Sites};
use cranelift::codegen::ir::{self, ExternalName, Function, Inst, InstructionData};
use cranelift::codegen::{Final, FinalizedRelocTarget, MachSrcLoc};
use cranelift_module::FuncId;
use std::collections::HashMap;
use std::fmt::Write;

/// What a line of a listing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An instruction lowered from its site.
    Code,
    /// A block header (IR), at the block's first instruction's site.
    Label,
    /// Frame set-up or tear-down, or the IR's declarations: no site.
    Frame,
    /// Constant data after the code: no site.
    Data,
}

/// One line of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Index into [`Listing::sites`].
    pub site: Option<usize>,
    /// What the line is.
    pub role: Role,
    /// The code offset (machine code only).
    pub offset: Option<u32>,
    /// The instruction as text.
    pub text: String,
    /// What the line refers to that its text cannot say (the helper a call goes to).
    pub comment: Option<String>,
}

/// The listings of one compiled function.
#[derive(Clone, Debug, Default)]
pub struct BodyListing {
    /// Which body: `decide`, or `decide_clean` (for rows without field errors).
    pub name: String,
    /// The IR after optimization.
    pub clif: Vec<Line>,
    /// The machine code, disassembled.
    pub asm: Vec<Line>,
    /// Cranelift's VCode listing (after register allocation, before encoding).
    pub vcode: String,
    /// The size of the machine code in bytes.
    pub code_size: usize,
}

/// The listings of a unit: its bodies and the sites their lines point to.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Where lines come from, by index.
    pub sites: Vec<Site>,
    /// The general body first, then (for decisions) the body for rows without field errors.
    pub bodies: Vec<BodyListing>,
}

/// What the listing of one body needs to name things.
pub(crate) struct Names<'a> {
    pub sites: &'a mut Sites,
    /// Addresses of boxed constants, by their index.
    pub consts: HashMap<i64, usize>,
    /// The symbol of every declared function.
    pub funcs: &'a HashMap<FuncId, &'static str>,
}

/// The listing of one compiled function (`func` after optimization, `code` its buffer).
pub(crate) fn body(
    name: &str,
    func: &Function,
    code: &cranelift::codegen::CompiledCode,
    names: &mut Names<'_>,
) -> BodyListing {
    BodyListing {
        name: name.to_string(),
        clif: clif(func, names),
        asm: asm(func, code, names),
        vcode: code.vcode.clone().unwrap_or_default(),
        code_size: code.code_buffer().len(),
    }
}

/// The site of every instruction of `func`. The optimizer's rewrites create instructions
/// without a location (an `sshr` of a wider type, a constant materialized in a new block): such
/// an instruction takes the site of the first instruction that uses its result, else of the
/// next instruction of its block with one.
fn inst_sites(func: &Function, names: &mut Names<'_>) -> HashMap<Inst, usize> {
    let mut sites: HashMap<Inst, usize> = HashMap::new();
    let mut users: HashMap<ir::Value, Inst> = HashMap::new();
    // Noted instructions by what they compute: the optimizer's copies are equal to them.
    let mut noted: HashMap<InstructionData, usize> = HashMap::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            if let Some(s) = names.sites.index(func.srcloc(inst)) {
                sites.insert(inst, s);
                if names.sites.all()[s].note.is_some() {
                    noted.entry(func.dfg.insts[inst]).or_insert(s);
                }
            }
            for arg in func.dfg.inst_values(inst) {
                users.entry(arg).or_insert(inst);
            }
        }
    }
    // Results feed later instructions: walking backwards settles chains in one pass.
    let order: Vec<Inst> = func
        .layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b))
        .collect();
    let mut next_in_block: Option<(ir::Block, usize)> = None;
    for &inst in order.iter().rev() {
        let block = func.layout.inst_block(inst);
        if !sites.contains_key(&inst) {
            let by_user = func
                .dfg
                .inst_results(inst)
                .iter()
                .find_map(|r| users.get(r).and_then(|u| sites.get(u)).copied());
            let by_next = next_in_block
                .filter(|(b, _)| Some(*b) == block)
                .map(|(_, s)| s);
            if let Some(s) = by_user.or(by_next) {
                let plain = names.sites.plain(s);
                let s = match noted.get(&func.dfg.insts[inst]) {
                    Some(n) => names.sites.renoted(plain, *n),
                    None => plain,
                };
                sites.insert(inst, s);
            }
        }
        if let (Some(b), Some(s)) = (block, sites.get(&inst)) {
            next_in_block = Some((b, *s));
        }
    }
    sites
}

fn clif(func: &Function, names: &mut Names<'_>) -> Vec<Line> {
    let sites = inst_sites(func, names);
    let mut lines = Vec::new();
    // The declarations the IR printer writes before the first block.
    let whole = func.display().to_string();
    for text in whole.lines().take_while(|l| !l.starts_with("block")) {
        lines.push(frame(text.to_string(), None));
    }
    for block in func.layout.blocks() {
        let first = func.layout.first_inst(block);
        let site = first.and_then(|i| sites.get(&i).copied());
        let params: Vec<String> = func
            .dfg
            .block_params(block)
            .iter()
            .map(|v| format!("{v}: {}", func.dfg.value_type(*v)))
            .collect();
        let params = if params.is_empty() {
            String::new()
        } else {
            format!("({})", params.join(", "))
        };
        let cold = if func.layout.is_cold(block) {
            " cold"
        } else {
            ""
        };
        lines.push(Line {
            site,
            role: Role::Label,
            offset: None,
            text: format!("{block}{params}:{cold}"),
            comment: None,
        });
        for inst in func.layout.block_insts(block) {
            let mut text = format!("    {}", func.dfg.display_inst(inst));
            // A constant's address shows where the instruction loads it and where the printer
            // spells out an argument's value.
            for (addr, k) in &names.consts {
                let shown = ir::immediates::Imm64::new(*addr).to_string();
                if text.contains(&shown) {
                    text = text.replace(&shown, &format!("<constant #{k}>"));
                }
            }
            let comment = match func.dfg.insts[inst] {
                InstructionData::Call { func_ref, .. } => {
                    callee(func, &func.dfg.ext_funcs[func_ref].name, names)
                }
                _ => None,
            };
            lines.push(Line {
                site: sites.get(&inst).copied(),
                role: Role::Code,
                offset: None,
                text,
                comment,
            });
        }
    }
    lines.push(frame("}".into(), None));
    lines
}

fn frame(text: String, offset: Option<u32>) -> Line {
    Line {
        site: None,
        role: Role::Frame,
        offset,
        text,
        comment: None,
    }
}

/// The symbol a call or relocation refers to.
fn callee(func: &Function, name: &ExternalName, names: &Names<'_>) -> Option<String> {
    match name {
        ExternalName::User(r) => {
            let user = func.params.user_named_funcs().get(*r)?;
            let id = FuncId::from_u32(user.index);
            Some(
                names
                    .funcs
                    .get(&id)
                    .map_or_else(|| format!("function {}", user.index), |s| s.to_string()),
            )
        }
        other => Some(other.display(Some(&func.params)).to_string()),
    }
}

fn asm(
    func: &Function,
    code: &cranelift::codegen::CompiledCode,
    names: &mut Names<'_>,
) -> Vec<Line> {
    use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Mnemonic, OpKind};
    let bytes = code.code_buffer();
    let locs: &[MachSrcLoc<Final>] = code.buffer.get_srclocs_sorted();
    let relocs: Vec<(u32, String)> = code
        .buffer
        .relocs()
        .iter()
        .filter_map(|r| match &r.target {
            FinalizedRelocTarget::ExternalName(n) => Some((r.offset, callee(func, n, names)?)),
            FinalizedRelocTarget::Func(_) => None,
        })
        .collect();
    let code_end = locs.iter().map(|l| l.end).max().unwrap_or(0);
    let site_at = |offset: u32| {
        let i = locs.partition_point(|l| l.end <= offset);
        locs.get(i)
            .filter(|l| l.start <= offset)
            .and_then(|l| names.sites.index(l.loc))
    };
    let mut formatter = GasFormatter::new();
    formatter.options_mut().set_uppercase_hex(false);
    formatter.options_mut().set_first_operand_char_index(8);
    formatter.options_mut().set_branch_leading_zeros(false);
    let mut decoder = Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE);
    let mut lines = Vec::new();
    let mut text = String::new();
    while decoder.can_decode() {
        let offset = decoder.position() as u32;
        let ins = decoder.decode();
        text.clear();
        formatter.format(&ins, &mut text);
        for i in 0..ins.op_count() {
            if ins.op_kind(i) == OpKind::Immediate64
                && let Some(k) = names.consts.get(&(ins.immediate64() as i64))
            {
                text = text.replace(
                    &format!("0x{:x}", ins.immediate64()),
                    &format!("<constant #{k}>"),
                );
            }
        }
        let end = offset + ins.len() as u32;
        let comment = relocs
            .iter()
            .find(|(at, _)| (offset..end).contains(at))
            .map(|(_, n)| n.clone());
        let site = site_at(offset);
        let line = Line {
            site,
            role: if site.is_some() {
                Role::Code
            } else {
                Role::Frame
            },
            offset: Some(offset),
            text: text.clone(),
            comment,
        };
        lines.push(line);
        // The last epilogue ends the code; constants follow.
        if offset >= code_end && ins.mnemonic() == Mnemonic::Ret {
            break;
        }
    }
    attribute_gaps(&mut lines, names.sites);
    name_copied_loads(&mut lines, names.sites);
    let rest = bytes.len() - decoder.position();
    if rest > 0 {
        let mut data = String::new();
        let _ = write!(data, ".byte {rest} bytes of constants");
        lines.push(Line {
            site: None,
            role: Role::Data,
            offset: Some(decoder.position() as u32),
            text: data,
            comment: None,
        });
    }
    lines
}

/// Gives a site to the machine instructions the code buffer has no location for, except frame
/// set-up and tear-down: the prologue (before the first located instruction) and each
/// epilogue (a run ending in `ret`) stay without. Any other run (register moves and reloads
/// the allocator placed between instructions, expansions of optimizer rewrites) takes the site
/// of the located instruction after it, or before it when the run ends in a jump.
fn attribute_gaps(lines: &mut [Line], sites: &mut Sites) {
    let Some(first) = lines.iter().position(|l| l.site.is_some()) else {
        return;
    };
    let mut i = first;
    while i < lines.len() {
        if lines[i].site.is_some() {
            i += 1;
            continue;
        }
        let end = lines[i..]
            .iter()
            .position(|l| l.site.is_some())
            .map_or(lines.len(), |n| i + n);
        let last = lines[end - 1].text.split_whitespace().next().unwrap_or("");
        let site = match last {
            "ret" => None,
            "jmp" => lines[i - 1].site,
            _ if end < lines.len() => lines[end].site,
            _ => None,
        };
        for line in &mut lines[i..end] {
            if let Some(s) = site {
                line.site = Some(sites.plain(s));
                line.role = Role::Code;
            }
        }
        i = end;
    }
}

/// A row load the optimizer copied into another param's code has no location of its own: it
/// takes the note of a located load of the same operand (`0xa0(%r13)`).
fn name_copied_loads(lines: &mut [Line], sites: &mut Sites) {
    let operand = |text: &str| {
        let open = text.find("(%")?;
        let start = text[..open].rfind([' ', ',']).map_or(0, |i| i + 1);
        let end = open + text[open..].find(')')? + 1;
        let op = &text[start..end];
        // The stack is never the row.
        (!op.contains("%rsp") && !op.contains("%rbp")).then(|| op.to_string())
    };
    let mut loads: HashMap<String, usize> = HashMap::new();
    for line in lines.iter() {
        let Some(s) = line.site else { continue };
        let is_load = sites.all()[s]
            .note
            .as_ref()
            .is_some_and(|n| matches!(n.kind, NoteKind::RowLoad | NoteKind::RowError));
        if let (true, Some(op)) = (is_load, operand(&line.text)) {
            loads.entry(op).or_insert(s);
        }
    }
    for line in lines.iter_mut() {
        let Some(s) = line.site else { continue };
        if sites.all()[s].note.is_some() {
            continue;
        }
        if let Some(n) = operand(&line.text).and_then(|op| loads.get(&op)) {
            line.site = Some(sites.renoted(s, *n));
        }
    }
}
