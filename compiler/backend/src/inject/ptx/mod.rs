//! A lossless reader and writer of PTX modules.
//!
//! [`parse`] splits the text into tokens; every token keeps its exact text and the
//! whitespace and comments before it (its *trivia*), and every token belongs to exactly one
//! item or statement, in order (each keeps its tokens' text as one string, the first
//! token's trivia and position apart). Writing concatenates them, so for every text `parse`
//! accepts, `parse(text)?.write() == text` byte for byte (tabs, CRLF, comments, trailing
//! blanks and debug sections included). Above the tokens sits the structured view the
//! injector reads: functions with their parameters and bodies, and in the bodies
//! instructions (guard, opcode with modifiers, operands), labels, declarations, directives
//! and brace blocks.
//!
//! Invariants the parser keeps (and the edits preserve):
//! - braces `{ }` in function bodies balance; a body is a flat list of statements in which
//!   [`StatementKind::BlockOpen`] and [`StatementKind::BlockClose`] mark nested blocks (flat,
//!   so that an instruction's index is one number the injector can insert at);
//! - instructions and declarations end at `;`, with `()`, `[]` and `{}` balanced before it;
//! - `.version`, `.target`, `.address_size`, `.file` and `.loc` end at the end of their line;
//! - `.section` is followed by its name and, if present, an opaque balanced `{ ... }` block
//!   (DWARF data); `@@DWARF` lines are one opaque token each.
//!
//! What the model does not check: that opcodes, types or registers exist, or that the
//! module would assemble; ptxas does that.

mod edit;
mod lexer;
mod parser;

pub use edit::EditError;

use lexer::Token;
use std::fmt;

/// Why a text is not PTX this reader accepts. Lines and columns are 1-based; columns count
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A byte that starts no PTX token.
    #[error("line {line}, column {column}: unexpected character {found:?}")]
    UnexpectedChar {
        /// The character.
        found: char,
        /// Its line.
        line: u32,
        /// Its column.
        column: u32,
    },
    /// A `/*` without its `*/`.
    #[error("line {line}, column {column}: unterminated /* comment")]
    UnterminatedComment {
        /// Where the comment starts.
        line: u32,
        /// Where the comment starts.
        column: u32,
    },
    /// A `"` without its closing quote on the same line.
    #[error("line {line}, column {column}: unterminated string")]
    UnterminatedString {
        /// Where the string starts.
        line: u32,
        /// Where the string starts.
        column: u32,
    },
    /// A token where something else was needed.
    #[error("line {line}, column {column}: expected {expected}, found `{found}`")]
    Unexpected {
        /// The token's text.
        found: String,
        /// What would have been accepted.
        expected: &'static str,
        /// The token's line.
        line: u32,
        /// The token's column.
        column: u32,
    },
    /// The text ended inside an item.
    #[error("line {line}, column {column}: unexpected end of input, expected {expected}")]
    UnexpectedEof {
        /// What was still needed.
        expected: &'static str,
        /// Where the unfinished item starts.
        line: u32,
        /// Where the unfinished item starts.
        column: u32,
    },
    /// A closing bracket that does not match the open one (or closes nothing).
    #[error("line {line}, column {column}: `{found}` does not close {open}")]
    Unbalanced {
        /// The closing bracket.
        found: String,
        /// What is open there (`"anything"` when nothing is).
        open: &'static str,
        /// Its line.
        line: u32,
        /// Its column.
        column: u32,
    },
    /// Brackets nested deeper than [`MAX_NESTING`].
    #[error("line {line}, column {column}: brackets nested deeper than {MAX_NESTING}")]
    TooDeep {
        /// Where the limit was passed.
        line: u32,
        /// Where the limit was passed.
        column: u32,
    },
}

/// How deep `( [ {` may nest (operands, initialisers, blocks). Compilers stay in single
/// digits; the limit keeps hostile input from exhausting memory or the stack.
pub const MAX_NESTING: usize = 256;

/// Parses a PTX module. Accepts nvcc's and clang's output (with or without `-G`,
/// `-lineinfo`, `-g`) and hand-written PTX; see the module doc for what is checked.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    parser::parse_module(text)
}

/// A PTX module: top-level items in order, then the trivia after the last token.
#[derive(Debug, Clone)]
pub struct Module {
    items: Vec<Item>,
    trailing: String,
}

/// One top-level item. `tokens` is the item's text (for a function: its header up to and
/// including the `{`, or the whole prototype).
#[derive(Debug, Clone)]
pub struct Item {
    tokens: Token,
    kind: ItemKind,
}

/// What a top-level item is.
#[derive(Debug, Clone)]
pub enum ItemKind {
    /// `.version`, `.target`, `.address_size`, `.file`, `.section`, `.pragma`, `@@DWARF`, ...
    Directive(Directive),
    /// A module-scope variable: `.global .align 4 .u32 hits;`, `.extern .shared ...`.
    Declaration(Declaration),
    /// An `.entry` or `.func`, with or without a body.
    Function(Function),
}

/// A directive: its name and its argument tokens' texts (without `,` and `;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// `.version`, `.loc`, `.pragma`, `.maxntid`, `@@DWARF ...` (the whole line), ...
    pub name: String,
    /// The arguments' texts, e.g. `["1", "12", "5"]` for `.loc 1 12 5`.
    pub args: Vec<String>,
}

/// A variable declaration: `.reg .b32 %r<10>;`, `.shared .align 4 .b8 tile[1024];`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// The state space: `.reg`, `.local`, `.shared`, `.global`, `.const`, `.param`, ...
    pub space: String,
    /// The other attributes in order, with their arguments: `.visible`, `.align`, `4`,
    /// `.v4`, `.b8`, ...
    pub attributes: Vec<String>,
    /// The declared variables.
    pub vars: Vec<Var>,
}

/// One declared variable or parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    /// Its name (`%r`, `tile`, `_Z6vecaddPfS_S_i_param_0`).
    pub name: String,
    /// `N` of a parameterised register declaration `%r<N>` (registers `%r0`..`%r{N-1}`).
    pub count: Option<u32>,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    /// Whether an initialiser `= ...` follows.
    pub initialized: bool,
}

/// A parameter of an `.entry` or `.func`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// `.param` or `.reg`.
    pub space: String,
    /// The attributes after the space, in order: `.u64`, `.ptr`, `.global`, `.align`, `8`.
    pub attributes: Vec<String>,
    /// The variable.
    pub var: Var,
}

impl Param {
    /// The parameter's type: the last attribute that names a PTX fundamental type.
    pub fn ty(&self) -> Option<&str> {
        self.attributes
            .iter()
            .rev()
            .map(String::as_str)
            .find(|a| is_type(a))
    }
}

/// `.entry` (a kernel) or `.func` (a device function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    /// `.entry`.
    Entry,
    /// `.func`.
    Func,
}

/// A function: header, parameters and (unless it is a prototype) a body.
#[derive(Debug, Clone)]
pub struct Function {
    kind: FunctionKind,
    linkage: Vec<String>,
    name: String,
    returns: Vec<Param>,
    params: Vec<Param>,
    attributes: Vec<Directive>,
    body: Vec<Statement>,
    /// The closing `}`; `None` for a prototype (`.extern .func f(...);`).
    close: Option<Token>,
    line: u32,
}

/// One statement of a function body: its tokens (text) and what it is.
#[derive(Debug, Clone)]
pub struct Statement {
    tokens: Token,
    kind: StatementKind,
}

/// What a body statement is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatementKind {
    /// An instruction.
    Instruction(Instruction),
    /// `name:`.
    Label(String),
    /// `.reg`, `.local`, `.shared`, `.param` ... declarations.
    Declaration(Declaration),
    /// `.loc`, `.pragma`, `.callprototype` and other directives.
    Directive(Directive),
    /// `{`: a nested block starts (nvcc's call sequences, inline asm scopes).
    BlockOpen,
    /// `}`: the innermost nested block ends.
    BlockClose,
}

/// An instruction: `@!%p1 ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+16];`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// The predicate guard, if any.
    pub guard: Option<Guard>,
    /// The opcode with its modifiers.
    pub opcode: Opcode,
    /// The operands in order.
    pub operands: Vec<Operand>,
    /// 1-based line in the parsed text; 0 for instructions an edit inserted.
    pub line: u32,
}

/// A predicate guard `@%p1` or `@!%p1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Whether the guard is negated (`@!`).
    pub negated: bool,
    /// The predicate register.
    pub register: String,
}

/// An opcode: `ld.global.nc.v4.f32` is base `ld` with modifiers
/// `["global", "nc", "v4", "f32"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opcode {
    /// The part before the first `.`.
    pub base: String,
    /// The dot-separated modifiers, without their dots (`shared::cta` stays one modifier).
    pub modifiers: Vec<String>,
}

impl Opcode {
    /// Whether `m` (without its dot) is one of the modifiers.
    pub fn has(&self, m: &str) -> bool {
        self.modifiers.iter().any(|x| x == m)
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)?;
        for m in &self.modifiers {
            write!(f, ".{m}")?;
        }
        Ok(())
    }
}

/// An operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// `%r1`, `%tid.x`.
    Register(String),
    /// `12`, `-4`, `0x1F`, `0f3F800000`.
    Immediate(String),
    /// A label, variable or function name: `$L__BB0_2`, `hits`, `_Z3mixfi`.
    Symbol(String),
    /// `{%f1, %f2}`.
    Vector(Vec<Operand>),
    /// `[base]`, `[base+offset]`, `[base+-offset]`: base is a register or a symbol.
    Address {
        /// The register or symbol.
        base: String,
        /// The byte offset (0 when absent).
        offset: i64,
    },
    /// `(param0, param1)` in `call`.
    List(Vec<Operand>),
    /// Anything else, as written (inner trivia kept): `%p1|%p2`, `!%p2`, `[100]`.
    Other(String),
}

/// What a memory instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// `ld`, `ldu`.
    Load,
    /// `st`.
    Store,
    /// `atom`: read-modify-write with a result.
    Atomic,
    /// `red`: read-modify-write without a result.
    Reduction,
}

/// The state space a memory instruction names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// `.global`.
    Global,
    /// `.shared` or `.shared::cta`.
    Shared,
    /// `.shared::cluster`.
    SharedCluster,
    /// `.local`.
    Local,
    /// `.const`.
    Const,
    /// `.param`.
    Param,
    /// No space modifier: a generic address.
    Generic,
}

/// A memory access as the injector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryAccess {
    /// Load, store, atomic or reduction.
    pub kind: AccessKind,
    /// The state space.
    pub space: Space,
    /// Vector width (`.v2`, `.v4`, `.v8`), if any.
    pub vector: Option<u8>,
    /// Index of the address operand in [`Instruction::operands`].
    pub address: usize,
}

impl Instruction {
    /// The memory access of an `ld`, `ldu`, `st`, `atom` or `red`; `None` for everything
    /// else.
    pub fn memory_access(&self) -> Option<MemoryAccess> {
        let (kind, address) = match self.opcode.base.as_str() {
            "ld" | "ldu" => (AccessKind::Load, 1),
            "st" => (AccessKind::Store, 0),
            "atom" => (AccessKind::Atomic, 1),
            "red" => (AccessKind::Reduction, 0),
            _ => return None,
        };
        let space = self
            .opcode
            .modifiers
            .iter()
            .find_map(|m| {
                Some(match m.as_str() {
                    "global" => Space::Global,
                    "shared" | "shared::cta" => Space::Shared,
                    "shared::cluster" => Space::SharedCluster,
                    "local" => Space::Local,
                    "const" => Space::Const,
                    "param" | "param::entry" | "param::func" => Space::Param,
                    _ => return None,
                })
            })
            .unwrap_or(Space::Generic);
        let vector = self.opcode.modifiers.iter().find_map(|m| match m.as_str() {
            "v2" => Some(2),
            "v4" => Some(4),
            "v8" => Some(8),
            _ => None,
        });
        Some(MemoryAccess {
            kind,
            space,
            vector,
            address,
        })
    }
}

impl Module {
    /// The module as text: the parsed input byte for byte, plus what edits inserted.
    pub fn write(&self) -> String {
        let mut s = String::new();
        for item in &self.items {
            item.write_to(&mut s);
        }
        s.push_str(&self.trailing);
        s
    }

    /// The trivia (white space, comments) after the last item.
    pub fn trailing(&self) -> &str {
        &self.trailing
    }

    /// The top-level items in order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The argument of `.version` (`"8.8"`).
    pub fn version(&self) -> Option<&str> {
        self.directive(".version")
            .and_then(|d| d.args.first())
            .map(String::as_str)
    }

    /// The arguments of `.target` (`["sm_90"]`, `["sm_70", "debug"]`).
    pub fn target(&self) -> Option<&[String]> {
        self.directive(".target").map(|d| d.args.as_slice())
    }

    /// The argument of `.address_size` (32 or 64).
    pub fn address_size(&self) -> Option<u32> {
        self.directive(".address_size")?.args.first()?.parse().ok()
    }

    fn directive(&self, name: &str) -> Option<&Directive> {
        self.items.iter().find_map(|i| match &i.kind {
            ItemKind::Directive(d) if d.name == name => Some(d),
            _ => None,
        })
    }

    /// The functions (with bodies and prototypes) in order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.items.iter().filter_map(|i| match &i.kind {
            ItemKind::Function(f) => Some(f),
            _ => None,
        })
    }

    /// The functions, for editing.
    pub fn functions_mut(&mut self) -> impl Iterator<Item = &mut Function> {
        self.items.iter_mut().filter_map(|i| match &mut i.kind {
            ItemKind::Function(f) => Some(f),
            _ => None,
        })
    }

    /// Takes the items out, leaving none (the trailing text stays): for a writer that drops
    /// each item once written, so a large module is not held both parsed and written.
    pub fn take_items(&mut self) -> Vec<Item> {
        std::mem::take(&mut self.items)
    }

    /// The function with a body named `name` (a prototype of the same name is skipped).
    pub fn function_mut(&mut self, name: &str) -> Option<&mut Function> {
        self.functions_mut()
            .find(|f| f.name == name && f.has_body())
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.write())
    }
}

impl Item {
    /// What the item is.
    pub fn kind(&self) -> &ItemKind {
        &self.kind
    }

    /// The function the item is, for editing.
    pub fn function_mut(&mut self) -> Option<&mut Function> {
        match &mut self.kind {
            ItemKind::Function(f) => Some(f),
            _ => None,
        }
    }

    /// 1-based line where the item starts.
    pub fn line(&self) -> u32 {
        self.tokens.line
    }

    /// The white space and comments before the item's first token.
    pub fn leading_trivia(&self) -> &str {
        self.tokens.trivia()
    }

    /// Appends the item's text, leading trivia included (for a function: header, body
    /// with every edit, closing brace), exactly as [`Module::write`] does.
    pub fn write_to(&self, s: &mut String) {
        s.push_str(self.tokens.as_written());
        if let ItemKind::Function(f) = &self.kind {
            for st in &f.body {
                s.push_str(st.tokens.as_written());
            }
            if let Some(c) = &f.close {
                s.push_str(c.as_written());
            }
        }
    }
}

impl Function {
    /// `.entry` or `.func`.
    pub fn kind(&self) -> FunctionKind {
        self.kind
    }

    /// The linking directives before `.entry`/`.func`: `.visible`, `.extern`, `.weak`.
    pub fn linkage(&self) -> &[String] {
        &self.linkage
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The return parameters of a `.func` (`(.param .b32 func_retval0)`).
    pub fn returns(&self) -> &[Param] {
        &self.returns
    }

    /// The parameters.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// The directives between the parameters and the body: `.maxntid 256, 1, 1`,
    /// `.reqntid`, `.minnctapersm`, `.noreturn`, ...
    pub fn attributes(&self) -> &[Directive] {
        &self.attributes
    }

    /// Whether the function has a body (a prototype has none).
    pub fn has_body(&self) -> bool {
        self.close.is_some()
    }

    /// The body's statements (empty for a prototype).
    pub fn body(&self) -> &[Statement] {
        &self.body
    }

    /// 1-based line of the function's first header token.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The instructions with their statement indices (for [`Function::insert_before`]).
    pub fn instructions(&self) -> impl Iterator<Item = (usize, &Instruction)> {
        self.body
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match &s.kind {
                StatementKind::Instruction(insn) => Some((i, insn)),
                _ => None,
            })
    }
}

impl Statement {
    /// What the statement is.
    pub fn kind(&self) -> &StatementKind {
        &self.kind
    }

    /// The instruction, if the statement is one.
    pub fn as_instruction(&self) -> Option<&Instruction> {
        match &self.kind {
            StatementKind::Instruction(i) => Some(i),
            _ => None,
        }
    }

    /// 1-based line of the statement's first token; 0 when an edit inserted it.
    pub fn line(&self) -> u32 {
        self.tokens.line
    }

    /// The statement's text without the trivia before it.
    pub fn text(&self) -> String {
        self.tokens.text().to_string()
    }
}

/// Whether `a` names a PTX fundamental type (`.b8` ... `.f64`, `.pred`, `.f16x2`, ...).
fn is_type(a: &str) -> bool {
    matches!(
        a,
        ".pred"
            | ".b8"
            | ".b16"
            | ".b32"
            | ".b64"
            | ".b128"
            | ".u8"
            | ".u16"
            | ".u32"
            | ".u64"
            | ".s8"
            | ".s16"
            | ".s32"
            | ".s64"
            | ".f16"
            | ".f16x2"
            | ".bf16"
            | ".bf16x2"
            | ".tf32"
            | ".f32"
            | ".f64"
            | ".e4m3"
            | ".e5m2"
            | ".e4m3x2"
            | ".e5m2x2"
    )
}

/// State spaces that start a declaration.
fn is_space(a: &str) -> bool {
    matches!(
        a,
        ".reg"
            | ".sreg"
            | ".const"
            | ".global"
            | ".local"
            | ".param"
            | ".shared"
            | ".shared::cta"
            | ".shared::cluster"
            | ".tex"
    )
}

/// Linking directives that may precede a declaration or a function.
fn is_linkage(a: &str) -> bool {
    matches!(a, ".visible" | ".extern" | ".weak" | ".common")
}
