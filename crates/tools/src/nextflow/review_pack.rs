//! The review pack's budget: sections of whole lines, each held to its own share of what one
//! tool answer may carry, so the output limit (64 KiB, 2000 lines by default) never cuts the
//! pack mid-section and what a section could not hold is said at its end and in `== left out`,
//! with the tool call that gets it.

use codaris_nextflow::parse::{Pipeline, render_outline};

/// What the whole pack may take: below the default output limit (64 KiB, 2000 lines) with
/// room for the header and the `left out` section, so the limiter never has to cut.
pub(super) const PACK_BYTES: usize = 56 * 1024;
pub(super) const PACK_LINES: usize = 1500;

/// A section's share of the pack.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cap {
    pub bytes: usize,
    pub lines: usize,
}

/// One section: its title, its lines in the order they matter most, and what to say of those
/// that do not fit.
pub(super) struct Section {
    pub title: &'static str,
    /// The first lines are the summary: they are kept first, like any other line, so a
    /// section always opens with them.
    pub lines: Vec<String>,
    /// What a line is (`findings`, `lint lines`), for "12 more findings not shown".
    pub noun: &'static str,
    /// How to get everything: the tool call, in words.
    pub whole: String,
    pub cap: Cap,
}

/// The pack being written: its text, the sections waiting to be laid out, and what was left
/// out.
pub(super) struct Pack {
    text: String,
    lines: usize,
    sections: Vec<Section>,
    /// A section shown only whole (the outline), after the others, with what to say instead.
    whole: Option<(String, Vec<String>, String)>,
    left_out: Vec<String>,
}

/// Per section, the room its header and its "more … not shown" line take.
const SECTION_OVERHEAD: Cap = Cap {
    bytes: 200,
    lines: 2,
};

/// Kept for the `left out` section.
const LEFT_OUT_ROOM: Cap = Cap {
    bytes: 3 * 1024,
    lines: 30,
};

fn size(lines: &[String]) -> Cap {
    Cap {
        bytes: lines.iter().map(|l| l.len() + 1).sum(),
        lines: lines.len(),
    }
}

impl Pack {
    /// A pack starting with `head` (the answer's pinned first line).
    pub(super) fn new(head: String) -> Pack {
        let lines = head.lines().count();
        Pack {
            text: head,
            lines,
            sections: Vec::new(),
            whole: None,
            left_out: Vec::new(),
        }
    }

    /// What is left of the pack's budget.
    fn room(&self) -> Cap {
        Cap {
            bytes: PACK_BYTES.saturating_sub(self.text.len()),
            lines: PACK_LINES.saturating_sub(self.lines),
        }
    }

    /// Queues `section`, laid out in the order given.
    pub(super) fn section(&mut self, section: Section) {
        self.sections.push(section);
    }

    /// Queues a section shown after the others only when all of it fits in what they leave;
    /// otherwise `instead` goes to `left out`. For a section only useful whole (the outline).
    pub(super) fn whole_or_nothing(&mut self, title: &str, lines: &[String], instead: String) {
        self.whole = Some((title.to_owned(), lines.to_vec(), instead));
    }

    /// The pack. Each section first gets what it needs up to its cap; what the small ones do
    /// not use goes to the next that needs more, in order; then the whole-or-nothing section
    /// if it fits; and last `== left out`: what was not shown and how to get it, or that
    /// nothing was.
    pub(super) fn finish(mut self) -> String {
        let sections = std::mem::take(&mut self.sections);
        let room = self.room();
        let mut spare = Cap {
            bytes: room
                .bytes
                .saturating_sub(LEFT_OUT_ROOM.bytes + SECTION_OVERHEAD.bytes * sections.len()),
            lines: room
                .lines
                .saturating_sub(LEFT_OUT_ROOM.lines + SECTION_OVERHEAD.lines * sections.len()),
        };
        let needs: Vec<Cap> = sections.iter().map(|s| size(&s.lines)).collect();
        let mut grants: Vec<Cap> = Vec::with_capacity(sections.len());
        for (section, need) in sections.iter().zip(&needs) {
            let grant = Cap {
                bytes: need.bytes.min(section.cap.bytes).min(spare.bytes),
                lines: need.lines.min(section.cap.lines).min(spare.lines),
            };
            spare.bytes -= grant.bytes;
            spare.lines -= grant.lines;
            grants.push(grant);
        }
        for (grant, need) in grants.iter_mut().zip(&needs) {
            let more = Cap {
                bytes: need.bytes.saturating_sub(grant.bytes).min(spare.bytes),
                lines: need.lines.saturating_sub(grant.lines).min(spare.lines),
            };
            grant.bytes += more.bytes;
            grant.lines += more.lines;
            spare.bytes -= more.bytes;
            spare.lines -= more.lines;
        }
        for (section, grant) in sections.into_iter().zip(grants) {
            self.lay_out(section, grant);
        }
        if let Some((title, lines, instead)) = self.whole.take() {
            let need = size(&lines);
            if need.bytes + SECTION_OVERHEAD.bytes <= spare.bytes
                && need.lines + SECTION_OVERHEAD.lines <= spare.lines
            {
                self.push_line(&format!("== {title}"));
                for line in &lines {
                    self.push_line(line);
                }
            } else {
                self.left_out.push(instead);
            }
        }
        self.push_line("== left out");
        if self.left_out.is_empty() {
            self.push_line("nothing: this is the whole pack");
        }
        for line in std::mem::take(&mut self.left_out) {
            self.push_line(&line);
        }
        self.text
    }

    /// `section` within `grant`: its header, its lines in order while they fit, and a last
    /// line saying how many were not shown.
    fn lay_out(&mut self, section: Section, grant: Cap) {
        self.push_line(&format!("== {}", section.title));
        let (mut bytes, mut shown) = (0usize, 0usize);
        for line in &section.lines {
            if bytes + line.len() + 1 > grant.bytes || shown >= grant.lines {
                break;
            }
            bytes += line.len() + 1;
            shown += 1;
            self.push_line(line);
        }
        let hidden = section.lines.len().saturating_sub(shown);
        if hidden > 0 {
            self.push_line(&format!(
                "… {hidden} more {} not shown (see `== left out`)",
                section.noun
            ));
            self.left_out.push(format!(
                "{}: {hidden} more {}: {}",
                section.title, section.noun, section.whole
            ));
        }
    }

    /// Adds, straight away, a section of groups (the outline's directories and files), each
    /// whole or not at all: as many as fit, the smallest chosen first, shown in their order; those that do not
    /// fit are listed in `left out` with the call that shows them.
    fn groups(&mut self, title: &str, groups: Vec<Group>, empty: &str) {
        // Room kept for the `left out` line of each group not shown, and its header.
        const PER_LEFT_OUT: usize = 200;
        self.push_line(&format!("== {title}"));
        if groups.is_empty() {
            self.push_line(empty);
        }
        let size = |g: &Group| g.lines.iter().map(|l| l.len() + 1).sum::<usize>();
        let mut by_size: Vec<usize> = (0..groups.len()).collect();
        by_size.sort_by_key(|&i| groups.get(i).map_or(0, size));
        let room = self.room();
        let mut left = (
            room.bytes
                .saturating_sub(PER_LEFT_OUT * groups.len() + 1024),
            room.lines.saturating_sub(groups.len() + 10),
        );
        let mut shown = vec![false; groups.len()];
        for i in by_size {
            let Some(group) = groups.get(i) else { continue };
            let (bytes, lines) = (size(group), group.lines.len());
            if bytes <= left.0 && lines <= left.1 {
                left = (left.0 - bytes, left.1 - lines);
                if let Some(slot) = shown.get_mut(i) {
                    *slot = true;
                }
            }
        }
        for (group, shown) in groups.into_iter().zip(shown) {
            if shown {
                for line in &group.lines {
                    self.push_line(line);
                }
                continue;
            }
            let bytes = size(&group);
            // A directory can always be narrowed; a file only helps when it fits on its own.
            let how = if group.narrowable || bytes + 4096 <= PACK_BYTES {
                format!(
                    "review_pipeline with focus `structure` and under `{}`",
                    group.name
                )
            } else {
                "read the file itself".to_owned()
            };
            self.left_out.push(format!(
                "`{}`: {} outline lines ({} KiB): {how}",
                group.name,
                group.lines.len(),
                bytes.div_ceil(1024)
            ));
        }
    }

    fn push_line(&mut self, line: &str) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
    }
}

/// Outline lines of the files under one directory or file.
struct Group {
    name: String,
    lines: Vec<String>,
    /// Whether `under` the group's name gives a smaller part (it is a directory).
    narrowable: bool,
}

/// `focus: structure`: the reader's outline, of the files under `under` when given, grouped
/// one directory level below it, each group whole or named in `left out`.
pub(super) fn outline_only(pack: &mut Pack, pipeline: &Pipeline, under: Option<&str>) {
    let outline = render_outline(pipeline);
    let depth = under.map_or(0, |u| u.split('/').count()) + 1;
    let mut groups: Vec<Group> = Vec::new();
    for line in outline.lines() {
        let file = line_file(line);
        if let Some(under) = under
            && !(file == under || file.starts_with(&format!("{under}/")))
        {
            continue;
        }
        let parts: Vec<&str> = file.split('/').collect();
        let narrowable = parts.len() > depth;
        let name = parts
            .iter()
            .take(depth)
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        match groups.iter_mut().find(|g| g.name == name) {
            Some(group) => group.lines.push(line.to_owned()),
            None => groups.push(Group {
                name,
                lines: vec![line.to_owned()],
                narrowable,
            }),
        }
    }
    let title = match under {
        Some(under) => format!("outline under `{under}`"),
        None => "outline".to_owned(),
    };
    let empty = match under {
        Some(under) => format!("nothing the reader read is under `{under}`"),
        None => "nothing: the reader found no .nf file and no nextflow.config".to_owned(),
    };
    pack.groups(&title, groups, &empty);
}

/// The file an outline line is about: the text before its `:LINE:`.
fn line_file(line: &str) -> &str {
    let mut from = 0;
    while let Some(at) = line
        .get(from..)
        .and_then(|rest| rest.find(':'))
        .map(|i| i + from)
    {
        let after = line.get(at + 1..).unwrap_or("");
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after.get(digits..).is_some_and(|r| r.starts_with(':')) {
            return line.get(..at).unwrap_or("");
        }
        from = at + 1;
    }
    line
}

/// `under` as the outline writes paths: relative, no `./` in front, no `/` at the end.
pub(super) fn under_prefix(under: &str) -> String {
    let mut under = under.trim();
    while let Some(rest) = under.strip_prefix("./") {
        under = rest;
    }
    under.trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    use super::{Cap, Pack, Section, line_file, under_prefix};

    #[test]
    fn an_outline_line_names_its_file_even_with_colons_in_it() {
        assert_eq!(
            line_file("modules/a/main.nf:3: process A"),
            "modules/a/main.nf"
        );
        assert_eq!(line_file("odd:name.nf:12: workflow X"), "odd:name.nf");
        assert_eq!(line_file("no line number"), "no line number");
        assert_eq!(under_prefix("./modules/nf-core/"), "modules/nf-core");
    }

    fn section(title: &'static str, n: usize, lines: usize) -> Section {
        Section {
            title,
            lines: (0..n).map(|i| format!("{title} {i}")).collect(),
            noun: "things",
            whole: "call `x`".into(),
            cap: Cap {
                bytes: 1 << 20,
                lines,
            },
        }
    }

    #[test]
    fn each_section_keeps_its_share_and_the_first_takes_what_is_spare() {
        let mut pack = Pack::new("review of `p`\n".into());
        pack.section(section("a", 3000, 100));
        pack.section(section("b", 3000, 100));
        let text = pack.finish();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() <= super::PACK_LINES && text.len() <= super::PACK_BYTES);
        let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
        // `b` gets its share whole; `a` its share and everything `b` left.
        assert_eq!(count("b "), 100);
        assert!(count("a ") > 1000, "{}", count("a "));
        let b_more = format!("… {} more things not shown (see `== left out`)", 3000 - 100);
        assert!(lines.contains(&b_more.as_str()));
        let left = lines.iter().position(|l| *l == "== left out").unwrap_or(0);
        assert_eq!(
            lines.get(left + 2).copied(),
            Some("b: 2900 more things: call `x`")
        );
        assert_eq!(lines.last().copied(), Some("b: 2900 more things: call `x`"));
    }

    #[test]
    fn sections_that_fit_are_whole_and_nothing_is_left_out() {
        let mut pack = Pack::new("review of `p`\n".into());
        pack.section(section("a", 30, 10));
        pack.section(section("b", 2, 10));
        pack.whole_or_nothing("outline", &["o".into()], "outline: ask".into());
        let text = pack.finish();
        let a: String = (0..30).map(|i| format!("a {i}\n")).collect();
        assert_eq!(
            text,
            format!(
                "review of `p`\n== a\n{a}== b\nb 0\nb 1\n== outline\no\n== left out\nnothing: this is the whole pack\n"
            )
        );
    }
}
