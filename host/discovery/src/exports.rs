//! Static scan of an ES module's exported names.
//!
//! The gate checks that the host RPC module still exports the names a mapper's bridge
//! imports, without running it. A small tokenizer skips comments, strings, template literals
//! and regular expressions so that `export` inside them is not mistaken for a declaration;
//! the file hashes pin the exact bytes anyway, so this is a second, semantic check.
//!
//! Recognised: `export { a as b, c }` (with or without `from`), `export * as ns from`,
//! `export default`, and `export [async] function[*] | class | const | let | var NAME`
//! (the first declared name; destructuring patterns contribute nothing, which can only make
//! the gate stricter).

use std::collections::BTreeSet;
use std::iter::Peekable;

/// The names `source` exports.
pub fn exported_names(source: &str) -> BTreeSet<String> {
    let mut tokens = Lexer::new(source).peekable();
    let mut names = BTreeSet::new();
    let mut after_dot = false;
    while let Some(token) = tokens.next() {
        if token == Token::Ident("export") && !after_dot {
            read_export(&mut tokens, &mut names);
            after_dot = false;
            continue;
        }
        after_dot = token == Token::Punct(b'.');
    }
    names
}

fn read_export(tokens: &mut Peekable<Lexer<'_>>, names: &mut BTreeSet<String>) {
    match tokens.next() {
        Some(Token::Punct(b'{')) => read_clause(tokens, names),
        Some(Token::Punct(b'*')) => {
            if tokens.next_if_eq(&Token::Ident("as")).is_some()
                && let Some(name) = tokens.next().and_then(Token::name)
            {
                names.insert(name);
            }
        }
        Some(Token::Ident("default")) => {
            names.insert("default".to_string());
        }
        Some(Token::Ident("async")) if tokens.next_if_eq(&Token::Ident("function")).is_some() => {
            read_declared_name(tokens, names);
        }
        Some(Token::Ident("function" | "class" | "const" | "let" | "var")) => {
            read_declared_name(tokens, names);
        }
        _ => {}
    }
}

/// `{ a as b, c, "x y" as d }` after the opening brace.
fn read_clause(tokens: &mut Peekable<Lexer<'_>>, names: &mut BTreeSet<String>) {
    loop {
        let Some(local) = tokens.next().and_then(Token::name) else { return };
        let exported = if tokens.next_if_eq(&Token::Ident("as")).is_some() {
            match tokens.next().and_then(Token::name) {
                Some(name) => name,
                None => return,
            }
        } else {
            local
        };
        names.insert(exported);
        match tokens.next() {
            Some(Token::Punct(b',')) => {
                if tokens.next_if_eq(&Token::Punct(b'}')).is_some() {
                    return;
                }
            }
            _ => return,
        }
    }
}

fn read_declared_name(tokens: &mut Peekable<Lexer<'_>>, names: &mut BTreeSet<String>) {
    tokens.next_if_eq(&Token::Punct(b'*')); // generator functions
    if let Some(Token::Ident(name)) = tokens.next() {
        names.insert(name.to_string());
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    /// A string literal's value.
    Str(String),
    Punct(u8),
    /// Numbers, template literals, regular expressions: never part of an export.
    Other,
}

impl Token<'_> {
    /// A module export name: an identifier or a string literal.
    fn name(self) -> Option<String> {
        match self {
            Token::Ident(name) => Some(name.to_string()),
            Token::Str(value) => Some(value),
            _ => None,
        }
    }
}

/// Keywords after which `/` starts a regular expression rather than a division.
const REGEX_AFTER: [&str; 14] = [
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    brace_depth: usize,
    /// Brace depths at which an open `${` of a template literal resumes the template.
    templates: Vec<usize>,
    /// Whether a `/` here would start a regular expression.
    regex_allowed: bool,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        let mut lexer = Self {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            brace_depth: 0,
            templates: Vec::new(),
            regex_allowed: true,
        };
        if src.starts_with("#!") {
            lexer.skip_line();
        }
        lexer
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    fn skip_line(&mut self) {
        while let Some(b) = self.peek_at(0) {
            if b == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.pos += 2;
        match self.src[self.pos..].find("*/") {
            Some(end) => self.pos += end + 2,
            None => self.pos = self.bytes.len(),
        }
    }

    fn string(&mut self, quote: u8) -> Token<'a> {
        self.pos += 1;
        let mut value = Vec::new();
        while let Some(b) = self.peek_at(0) {
            self.pos += 1;
            match b {
                b'\\' => {
                    if let Some(escaped) = self.peek_at(0) {
                        value.push(escaped);
                        self.pos += 1;
                    }
                }
                b'\n' => break, // unterminated: a string cannot span lines
                _ if b == quote => break,
                _ => value.push(b),
            }
        }
        Token::Str(String::from_utf8_lossy(&value).into_owned())
    }

    /// Scans template text up to the closing backtick or the next `${`.
    fn template_text(&mut self) {
        while let Some(b) = self.peek_at(0) {
            match b {
                b'\\' => self.pos += 2,
                b'`' => {
                    self.pos += 1;
                    return;
                }
                b'$' if self.peek_at(1) == Some(b'{') => {
                    self.pos += 2;
                    self.templates.push(self.brace_depth);
                    self.brace_depth += 1;
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn regex(&mut self) {
        self.pos += 1;
        let mut in_class = false;
        while let Some(b) = self.peek_at(0) {
            match b {
                b'\\' => self.pos += 1,
                b'[' => in_class = true,
                b']' => in_class = false,
                b'/' if !in_class => break,
                b'\n' => return,
                _ => {}
            }
            self.pos += 1;
        }
        self.pos += 1;
        while self.peek_at(0).is_some_and(is_ident_byte) {
            self.pos += 1;
        }
    }

    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek_at(0).is_some_and(is_ident_byte) {
            self.pos += 1;
        }
        &self.src[start..self.pos]
    }

    fn token(&mut self) -> Option<Token<'a>> {
        loop {
            let b = self.peek_at(0)?;
            match b {
                _ if b.is_ascii_whitespace() => self.pos += 1,
                b'/' if self.peek_at(1) == Some(b'/') => self.skip_line(),
                b'/' if self.peek_at(1) == Some(b'*') => self.skip_block_comment(),
                b'/' if self.regex_allowed => {
                    self.regex();
                    return Some(Token::Other);
                }
                b'\'' | b'"' => return Some(self.string(b)),
                b'`' => {
                    self.pos += 1;
                    self.template_text();
                    return Some(Token::Other);
                }
                b'{' => {
                    self.pos += 1;
                    self.brace_depth += 1;
                    return Some(Token::Punct(b));
                }
                b'}' => {
                    self.pos += 1;
                    self.brace_depth = self.brace_depth.saturating_sub(1);
                    if self.templates.last() == Some(&self.brace_depth) {
                        self.templates.pop();
                        self.template_text();
                        return Some(Token::Other);
                    }
                    return Some(Token::Punct(b));
                }
                b'0'..=b'9' => {
                    self.word();
                    return Some(Token::Other);
                }
                _ if is_ident_byte(b) => return Some(Token::Ident(self.word())),
                _ => {
                    self.pos += 1;
                    return Some(Token::Punct(b));
                }
            }
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let token = self.token()?;
        self.regex_allowed = match &token {
            Token::Punct(b) => !matches!(b, b')' | b']'),
            Token::Ident(word) => REGEX_AFTER.contains(word),
            Token::Str(_) | Token::Other => false,
        };
        Some(token)
    }
}

/// Identifier bytes; non-ASCII bytes count so that Unicode identifiers stay whole.
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str) -> Vec<String> {
        exported_names(source).into_iter().collect()
    }

    #[test]
    fn reads_export_clauses_as_bundlers_write_them() {
        assert_eq!(names("var A=1;export{A as g,B as i,C as j};"), ["g", "i", "j"]);
        assert_eq!(names("export { a, b as c, };\nexport {d} from './x.js'"), ["a", "c", "d"]);
        assert_eq!(names("export { x as default, \"odd name\" as \"y z\" }"), ["default", "y z"]);
        assert_eq!(names("export * as ns from 'm'; export * from 'n';"), ["ns"]);
    }

    #[test]
    fn reads_declarations_and_default() {
        let source = "export function f(){}\nexport async function* g(){}\nexport class K{}\n\
                      export const c=1, d=2; export let l; export var v;\nexport default 42;";
        assert_eq!(names(source), ["K", "c", "default", "f", "g", "l", "v"]);
        assert_eq!(names("export const { a, b } = o;"), Vec::<String>::new());
    }

    #[test]
    fn ignores_export_inside_comments_strings_templates_and_regexes() {
        let source = r#"
            // export { a as fromLineComment }
            /* export { b as fromBlock } */
            const s = "export { c as fromString }", t = 'export{d}';
            const u = `export { e } ${ {k: `nested export {f}`}.k } still template export {g}`;
            const r = /export { h }[/]/g.test(s), q = x / 2 / y;
            obj.export = 1; obj?.export;
            export { real };
        "#;
        assert_eq!(names(source), ["real"]);
    }

    #[test]
    fn a_division_is_not_a_regex() {
        // If `/ 2 /` were taken for a regex, `export` would be swallowed with it.
        assert_eq!(names("a = (b) / 2; export { k }; c = d[0] / 3 / 4"), ["k"]);
    }
}
