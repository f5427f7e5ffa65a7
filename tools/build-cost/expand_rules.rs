// Included by the throwaway harness that run.sh builds (EXPAND=1) next to a copy of
// rules-macro/src: runs the macro's own expansion function (`expand::derivative_rule`, on
// proc_macro2 tokens) over every rule of the generated annotated crate, outside rustc, times it,
// and appends the expansions to the `expanded` crate, which is then compiled like the others.
//
//   expand-rules RULES_TXT LIB_RS     (RULES_TXT as gen.py writes it: "@@ ATTR" lines, items)

use proc_macro2::TokenStream;
use std::io::Write;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let input = std::fs::read_to_string(&args[1]).expect("RULES_TXT");
    let rules: Vec<(TokenStream, TokenStream)> = input
        .split("@@ ")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let (attr, item) = b.split_once('\n').expect("@@ ATTR, then the item");
            (
                attr.parse().expect("attribute"),
                item.parse().expect("item"),
            )
        })
        .collect();
    let tokens_in: usize = rules.iter().map(|(a, i)| count(a) + count(i)).sum();
    let n = rules.len();
    let start = Instant::now();
    let out: Vec<TokenStream> = rules
        .into_iter()
        .map(|(attr, item)| expand::derivative_rule(attr, item))
        .collect();
    let elapsed = start.elapsed();
    let tokens_out: usize = out.iter().map(count).sum();
    let mut lib = std::fs::OpenOptions::new()
        .append(true)
        .open(&args[2])
        .expect("LIB_RS");
    for o in &out {
        let text = o.to_string();
        assert!(
            !text.contains("compile_error"),
            "a rule failed to expand: {text}"
        );
        writeln!(lib, "{text}\n").expect("write");
    }
    println!("{n} {} {tokens_in} {tokens_out}", elapsed.as_micros());
}

/// Tokens, counting into groups (a group's delimiters count as one).
fn count(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => 1 + count(&g.stream()),
            _ => 1,
        })
        .sum()
}
