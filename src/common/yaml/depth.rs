//! A linear pre-scan of YAML text for the nesting depth of flow collections (`[...]`, `{...}`),
//! run before the YAML parser, whose flow handling costs time quadratic in that depth (40,000
//! nested `[` took seconds before the parser's own recursion limit answered).
//!
//! Takes the text and a limit; gives the line and column of the first `[` or `{` nested deeper
//! than the limit, if any. The scan knows just enough YAML to skip what cannot open a flow
//! collection: comments, quoted scalars, block scalars (`|`, `>`) and brackets inside plain
//! scalars of block context (`x[0]`).
//!
//! Invariant: one pass over the bytes, no allocation. It may over-count only where a plain
//! scalar holds a bracket after a space with no closing one (`msg: see [1`), so a real config is
//! rejected only if it has more than the limit of those.

use super::LineCol;

/// Where the first flow collection nested deeper than `limit` opens, if one does.
pub fn too_deep(text: &str, limit: usize) -> Option<LineCol> {
    Scan::new(text.as_bytes()).run(limit)
}

struct Scan<'t> {
    bytes: &'t [u8],
    at: usize,
    line: usize,
    /// 1-based column of the byte at `at`, counted in characters.
    column: usize,
    /// Leading spaces of the current line.
    indent: usize,
    /// Inside `depth` flow collections.
    depth: usize,
    /// A node may start here: at a line's first character, after `- `, `? `, `: `, or in flow
    /// context after `[`, `{`, `,`, `:`.
    node_start: bool,
    /// The previous byte on this line, `None` at its start.
    last: Option<u8>,
    /// Inside a block scalar whose indicator line is indented this much.
    block_scalar: Option<usize>,
}

impl<'t> Scan<'t> {
    fn new(bytes: &'t [u8]) -> Scan<'t> {
        Scan {
            bytes,
            at: 0,
            line: 1,
            column: 1,
            indent: 0,
            depth: 0,
            node_start: true,
            last: None,
            block_scalar: None,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Moves past one byte, keeping line and column.
    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        if b == b'\n' {
            self.line += 1;
            self.column = 1;
        } else if b & 0xC0 != 0x80 {
            self.column += 1;
        }
        Some(b)
    }

    fn run(mut self, limit: usize) -> Option<LineCol> {
        self.start_line();
        while let Some(b) = self.peek() {
            let position = LineCol {
                line: self.line,
                column: self.column,
            };
            self.bump();
            match b {
                b'\n' => {
                    self.start_line();
                    continue;
                }
                b' ' | b'\t' => {
                    if matches!(self.last, Some(b'-' | b'?' | b':')) {
                        self.node_start = true;
                    }
                }
                b'#' if self.last.is_none_or(|l| l == b' ' || l == b'\t') => self.skip_line(),
                b'"' | b'\'' if self.node_start => {
                    self.skip_quoted(b);
                    self.node_start = false;
                }
                b'[' | b'{' if self.depth > 0 || self.node_start => {
                    self.depth += 1;
                    if self.depth > limit {
                        return Some(position);
                    }
                    self.node_start = true;
                }
                b']' | b'}' if self.depth > 0 => {
                    self.depth -= 1;
                    self.node_start = false;
                }
                b',' | b':' if self.depth > 0 => self.node_start = true,
                b'|' | b'>' if self.depth == 0 && self.node_start => {
                    self.block_scalar = Some(self.indent);
                    self.skip_line();
                }
                // A tag or an anchor comes before its node.
                b'!' | b'&' if self.node_start => self.skip_word(),
                _ => self.node_start = false,
            }
            self.last = Some(b);
        }
        None
    }

    /// At the first byte of a line: measures its indentation and skips it whole while it belongs
    /// to a block scalar (blank, or indented deeper than the indicator's line).
    fn start_line(&mut self) {
        loop {
            let rest = &self.bytes[self.at..];
            let indent = rest.iter().take_while(|b| **b == b' ').count();
            let blank = rest
                .get(indent..)
                .is_none_or(|r| r.first().is_none_or(|b| matches!(b, b'\n' | b'\r')));
            match self.block_scalar {
                Some(parent) if blank || indent > parent => {
                    self.skip_line();
                    if self.bump().is_none() {
                        return;
                    }
                }
                _ => {
                    self.block_scalar = None;
                    self.indent = indent;
                    self.node_start = true;
                    self.last = None;
                    return;
                }
            }
        }
    }

    /// Skips to the end of the line, leaving the newline.
    fn skip_line(&mut self) {
        while self.peek().is_some_and(|b| b != b'\n') {
            self.bump();
        }
    }

    /// Skips to the next space, tab or newline.
    fn skip_word(&mut self) {
        while self
            .peek()
            .is_some_and(|b| !matches!(b, b' ' | b'\t' | b'\n'))
        {
            self.bump();
        }
    }

    /// Skips a quoted scalar opened by `quote`, up to and including its closing quote.
    fn skip_quoted(&mut self, quote: u8) {
        while let Some(b) = self.bump() {
            match b {
                b'\\' if quote == b'"' => {
                    self.bump();
                }
                b'\'' if quote == b'\'' && self.peek() == Some(b'\'') => {
                    self.bump();
                }
                _ if b == quote => return,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(text: &str) -> Option<(usize, usize)> {
        too_deep(text, 3).map(|p| (p.line, p.column))
    }

    #[test]
    fn counts_flow_nesting() {
        assert_eq!(deep("x: [[[1]]]\n"), None);
        assert_eq!(deep("x: [[[[1]]]]\n"), Some((1, 7)));
        assert_eq!(deep("x: {a: [{b: [1]}]}\n"), Some((1, 13)));
        assert_eq!(deep("- [\n  [\n    [\n      [1]]]]\n"), Some((4, 7)));
        // Siblings do not add up.
        assert_eq!(deep("x: [[[1]], [[2]], [[3]]]\n"), None);
    }

    #[test]
    fn skips_what_cannot_open_a_collection() {
        assert_eq!(deep("x: \"[[[[\"\n"), None);
        assert_eq!(deep("x: '[[[[ it''s'\n"), None);
        assert_eq!(deep("x: a[0][1][2][3]\n"), None);
        assert_eq!(deep("x: 1 # [[[[\n"), None);
        assert_eq!(deep("x: |\n  [[[[\n\n  [[[[\ny: 1\n"), None);
        assert_eq!(deep("x: |\n  [[[[\ny: [[[[1]]]]\n"), Some((3, 7)));
        assert_eq!(deep("x: !!seq [[[[1]]]]\n"), Some((1, 13)));
        assert_eq!(deep("x: a == \"it's\"\ny: [[[1]]]\n"), None);
        assert_eq!(deep("x: [\"]]]]\", [[[1]]]]\n"), Some((1, 15)));
    }
}
