//! `sentinel ir --html`: one self-contained page (no network, no external script or style) with
//! the rules' CEL source on the left and a stage on the right (a switcher for tokens, AST, typed
//! tree, IR and machine code); hovering or clicking a source span highlights the lines lowered
//! from it (and from the nodes inside it), and a line highlights its span.
//!
//! Every element that can be highlighted carries its expression and span as `data-e`, `data-a`,
//! `data-b`; the script compares those and nothing else. The page acts on its URL fragment on
//! load (`#stage=asm&click=E:A:B`: show a stage, click a span), which is how the browser test
//! drives it without a debugging protocol.

use super::text::{self, comment, group_header};
use super::{Item, Native, Stage, View};
use crate::cel::span::Span;
use std::fmt::Write;

/// The page: `front` holds the printed front-end stages (tokens, AST, typed), `shown` is the
/// stage selected when the page opens.
pub(super) fn page(
    items: &[Item<'_>],
    native: &Native<'_>,
    front: &[(Stage, String)],
    shown: Stage,
    view: View,
) -> String {
    let mut out = String::from(HEAD);
    let _ = write!(out, "<title>sentinel ir: {}</title>", esc(&native.title));
    out.push_str(STYLE);
    out.push_str("</head><body>");
    let _ = write!(
        out,
        "<header><b>sentinel ir</b> {}<nav id=\"stages\">",
        esc(&native.title)
    );
    let stages = [
        (Stage::Summary, "summary"),
        (Stage::Tokens, "tokens"),
        (Stage::Ast, "ast"),
        (Stage::Typed, "typed"),
        (Stage::Clif, "clif"),
        (Stage::Asm, "asm"),
    ];
    let shown = if stages.iter().any(|(s, _)| *s == shown) {
        shown
    } else {
        Stage::Asm
    };
    for (s, name) in stages {
        let on = if s == shown { " class=\"on\"" } else { "" };
        let _ = write!(out, "<button data-stage=\"{name}\"{on}>{name}</button>");
    }
    out.push_str("</nav></header><main><section id=\"source\">");
    source(&mut out, native);
    out.push_str("</section><section id=\"code\">");
    for (s, name) in stages {
        let hidden = if s == shown { "" } else { " hidden" };
        let _ = write!(out, "<div class=\"stage\" id=\"stage-{name}\"{hidden}>");
        match s {
            Stage::Summary => plain(&mut out, &text::summary(native, view)),
            Stage::Clif | Stage::Asm => code(&mut out, native, s, view),
            _ => {
                let printed = front.iter().find(|(f, _)| *f == s).map(|(_, t)| t.as_str());
                front_end(&mut out, items, native, printed.unwrap_or(""));
            }
        }
        out.push_str("</div>");
    }
    out.push_str("</section></main>");
    out.push_str(SCRIPT);
    out.push_str("</body></html>\n");
    out
}

/// The unit's expression index of an item (the result, or the one param asked for, is last).
fn expr_of(native: &Native<'_>, item: &Item<'_>) -> Option<usize> {
    (0..native.exprs.len()).find(|e| native.item(*e).is_some_and(|i| i.origin == item.origin))
}

/// Each expression's source, every span some stage refers to wrapped in a nested element.
fn source(out: &mut String, native: &Native<'_>) {
    for (e, item) in native.exprs.iter().enumerate() {
        let Some(item) = item else { continue };
        let mut spans: Vec<Span> = native
            .listing
            .sites
            .iter()
            .filter(|s| s.expr == Some(e))
            .map(|s| s.span)
            .filter(|s| s.end as usize <= item.source.len() && s.start < s.end)
            .collect();
        // Outer spans first, so that inner ones nest inside them.
        spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        spans.dedup();
        let _ = write!(
            out,
            "<h3>{}</h3><pre class=\"src\" data-e=\"{e}\">",
            esc(&item.origin.to_string())
        );
        nest(out, item.source, e, &spans);
        out.push_str("</pre>");
    }
}

/// Writes `source` with `spans` (sorted outer first) as nested elements; a span crossing an
/// open one is left out.
fn nest(out: &mut String, source: &str, e: usize, spans: &[Span]) {
    let mut open: Vec<Span> = Vec::new();
    let mut at = 0usize;
    let mut next = spans.iter().peekable();
    let bytes = source.len();
    while at <= bytes {
        while open.last().is_some_and(|s| s.end as usize == at) {
            out.push_str("</span>");
            open.pop();
        }
        while let Some(s) = next.peek() {
            if (s.start as usize) > at {
                break;
            }
            let s = **s;
            next.next();
            let fits = s.start as usize == at && open.last().is_none_or(|o| s.end <= o.end);
            if fits {
                let _ = write!(
                    out,
                    "<span class=\"s\" data-e=\"{e}\" data-a=\"{}\" data-b=\"{}\">",
                    s.start, s.end
                );
                open.push(s);
            }
        }
        let Some(c) = source[at..].chars().next() else {
            break;
        };
        out.push_str(&esc(c.encode_utf8(&mut [0; 4])));
        at += c.len_utf8();
    }
    for _ in open {
        out.push_str("</span>");
    }
}

fn plain(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = write!(out, "<div class=\"h\">{}</div>", esc(line));
    }
}

/// A front-end stage: each printed line with an `@a..b` span tied to its expression.
fn front_end(out: &mut String, items: &[Item<'_>], native: &Native<'_>, printed: &str) {
    let mut expr = None;
    for line in printed.lines() {
        if let Some(origin) = line.strip_prefix("# ") {
            expr = items
                .iter()
                .find(|i| i.origin.to_string() == origin)
                .and_then(|i| expr_of(native, i));
            let _ = write!(out, "<div class=\"h\">{}</div>", esc(line));
            continue;
        }
        match (expr, span_in(line)) {
            (Some(e), Some(s)) => {
                let _ = write!(
                    out,
                    "<div class=\"l\" data-e=\"{e}\" data-a=\"{}\" data-b=\"{}\">{}</div>",
                    s.start,
                    s.end,
                    esc(line)
                );
            }
            _ => {
                let _ = write!(out, "<div class=\"h\">{}</div>", esc(line));
            }
        }
    }
}

/// The `@start..end` span a printed front-end line shows.
fn span_in(line: &str) -> Option<Span> {
    let at = line.find('@')?;
    let rest = &line[at + 1..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (a, b) = rest[..end].split_once("..")?;
    Some(Span::new(a.parse().ok()?, b.parse().ok()?))
}

/// The IR or machine code, grouped as the text output is, each line tied to its site.
fn code(out: &mut String, native: &Native<'_>, stage: Stage, view: View) {
    let Some(body) = text::body(native, view) else {
        return;
    };
    let lines = if stage == Stage::Clif {
        &body.clif
    } else {
        &body.asm
    };
    let sites = &native.listing.sites;
    let mut current = None;
    for line in lines {
        let site = line.site.map(|s| &sites[s]);
        let Some(s) = site.filter(|s| s.expr.is_some()) else {
            continue;
        };
        let key = Some((s.expr, s.span));
        if key != current {
            let _ = write!(
                out,
                "<div class=\"h\">{}</div>",
                esc(&group_header(native, s))
            );
            current = key;
        }
        let text = match line.offset {
            Some(o) => format!("{o:5x}:  {}", line.text.trim_start()),
            None => line.text.clone(),
        };
        let note = comment(site, line);
        let note = if note.is_empty() {
            String::new()
        } else {
            format!("<i> ; {}</i>", esc(&note))
        };
        let _ = write!(
            out,
            "<div class=\"l\" data-e=\"{}\" data-a=\"{}\" data-b=\"{}\">{}{note}</div>",
            s.expr.unwrap_or(0),
            s.span.start,
            s.span.end,
            esc(&text)
        );
    }
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";

const STYLE: &str = r#"<style>
body{margin:0;font:13px/1.4 ui-monospace,monospace;background:#fdfdfb;color:#222}
header{padding:6px 10px;border-bottom:1px solid #ccc;background:#f0f0ea}
nav{display:inline-block;margin-left:16px}
nav button{font:inherit;margin-right:4px;border:1px solid #aaa;background:#fff;cursor:pointer}
nav button.on{background:#335;color:#fff}
main{display:flex;height:calc(100vh - 34px)}
#source{flex:0 0 38%;overflow:auto;padding:8px;border-right:1px solid #ccc}
#code{flex:1;overflow:auto;padding:8px}
h3{font-size:12px;margin:10px 0 2px;color:#555}
pre.src{margin:0;white-space:pre-wrap}
.s{cursor:pointer;border-radius:2px}
.s:hover{outline:1px dotted #88a}
.l{white-space:pre;cursor:pointer}
.h{white-space:pre;color:#667}
.l i{color:#2a7;font-style:normal}
.hv{background:#eef2ff}
.hl{background:#ffe58a}
.sel{background:#ffc94a;outline:1px solid #b80}
</style>"#;

const SCRIPT: &str = r#"<script>
(function(){
  function key(el){return {e:el.dataset.e,a:+el.dataset.a,b:+el.dataset.b};}
  function visible(){return document.querySelector('.stage:not([hidden])');}
  function clear(cls){document.querySelectorAll('.'+cls).forEach(function(x){x.classList.remove(cls);});}
  // A source span: the lines of the shown stage lowered from it or from nodes inside it.
  function fromSpan(el,cls){
    clear(cls);if(cls==='hl')clear('sel');
    var k=key(el);el.classList.add(cls==='hl'?'sel':cls);
    visible().querySelectorAll('.l').forEach(function(l){
      var m=key(l);if(m.e===k.e&&m.a>=k.a&&m.b<=k.b)l.classList.add(cls);});
  }
  // A line: its span in the source (the innermost that covers it) and the lines of that span.
  function fromLine(el,cls){
    clear(cls);if(cls==='hl')clear('sel');
    var k=key(el),best=null;
    document.querySelectorAll('.s').forEach(function(s){
      var m=key(s);if(m.e===k.e&&m.a<=k.a&&m.b>=k.b&&(!best||m.b-m.a<=best.b-best.a)){best=m;best.el=s;}});
    if(best)best.el.classList.add(cls==='hl'?'sel':cls);
    visible().querySelectorAll('.l').forEach(function(l){
      var m=key(l);if(m.e===k.e&&m.a===k.a&&m.b===k.b)l.classList.add(cls);});
  }
  function target(ev){return ev.target.closest?ev.target.closest('.s,.l'):null;}
  document.addEventListener('click',function(ev){
    var t=target(ev);if(!t)return;ev.stopPropagation();
    if(t.classList.contains('s'))fromSpan(t,'hl');else fromLine(t,'hl');});
  document.addEventListener('mouseover',function(ev){
    var t=target(ev);if(!t){clear('hv');return;}
    if(t.classList.contains('s'))fromSpan(t,'hv');else fromLine(t,'hv');});
  function show(name){
    document.querySelectorAll('.stage').forEach(function(s){s.hidden=s.id!=='stage-'+name;});
    document.querySelectorAll('nav button').forEach(function(b){b.classList.toggle('on',b.dataset.stage===name);});
    clear('hl');clear('sel');clear('hv');
  }
  document.querySelectorAll('nav button').forEach(function(b){
    b.addEventListener('click',function(){show(b.dataset.stage);});});
  // `#stage=NAME&click=E:A:B` (a source span) or `#stage=NAME&line=N` (the Nth code line).
  var args={};location.hash.replace(/^#/,'').split('&').forEach(function(p){
    var kv=p.split('=');if(kv[0])args[kv[0]]=decodeURIComponent(kv[1]||'');});
  if(args.stage)show(args.stage);
  if(args.click){var p=args.click.split(':');
    var el=document.querySelector('.s[data-e="'+p[0]+'"][data-a="'+p[1]+'"][data-b="'+p[2]+'"]');
    if(el)el.click();else document.body.dataset.error='no span '+args.click;}
  if(args.line){var ls=visible().querySelectorAll('.l');var l=ls[+args.line];
    if(l)l.click();else document.body.dataset.error='no line '+args.line;}
})();
</script>"#;
