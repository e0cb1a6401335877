//! The string extension functions the Go sentinel enables (cel-go `ext.Strings`): `charAt`,
//! `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`,
//! `join`, `quote`, `reverse`, `format`.
//!
//! Invariant: indices count Unicode code points, never bytes, as cel-go does.
