// SPDX-License-Identifier: GPL-2.0

//! What the layout tests of the `write()` ABIs share (included by path,
//! `#[path = "common/wire_layout.rs"] mod wire_layout;`): a structure's
//! layout as the Rust declaration has it ([`layout`]), the C program that
//! prints the same facts from the headers ([`CProgram`]), and the
//! comparison of its output with what Rust expects ([`compare`]).

use std::collections::BTreeMap;

use rdma_spec::uverbs::WireStruct;

/// A structure's C name, size and (field, offset) list.
pub(crate) struct Layout {
    pub(crate) c_name: &'static str,
    pub(crate) size: usize,
    pub(crate) fields: Vec<(&'static str, usize)>,
}

/// The layout of `T`, its offsets the running sums of its field sizes.
pub(crate) fn layout<T: WireStruct>() -> Layout {
    let mut at = 0;
    let fields = T::FIELDS
        .iter()
        .map(|(n, s)| {
            let o = at;
            at += s;
            (*n, o)
        })
        .collect();
    assert_eq!(at, T::SIZE, "{}: field sizes add up to SIZE", T::C_NAME);
    Layout {
        c_name: T::C_NAME,
        size: T::SIZE,
        fields,
    }
}

/// The layouts of the types listed.
macro_rules! layouts {
    ($($t:ty),* $(,)?) => { vec![$(wire_layout::layout::<$t>()),*] };
}
pub(crate) use layouts;

/// A C program that prints "KEY VALUE" lines, and the values Rust
/// expects for each key.
pub(crate) struct CProgram {
    c: String,
    want: BTreeMap<String, u64>,
}

impl CProgram {
    /// A program including `<stdio.h>`, `<stddef.h>` and `headers`.
    pub(crate) fn new(headers: &[&str]) -> CProgram {
        let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n");
        for h in headers {
            c += &format!("#include <{h}>\n");
        }
        c += "int main(void)\n{\n";
        CProgram {
            c,
            want: BTreeMap::new(),
        }
    }

    /// The program prints C expression `expr` as `key`; Rust expects
    /// `value`.
    pub(crate) fn line(&mut self, key: String, expr: String, value: u64) {
        self.c += &format!("\tprintf(\"%s %llu\\n\", \"{key}\", (unsigned long long)({expr}));\n");
        self.want.insert(key, value);
    }

    /// The size of each structure and the offset of each of its fields.
    pub(crate) fn structs(&mut self, layouts: &[Layout]) {
        for l in layouts {
            let s = format!("struct {}", l.c_name);
            self.line(
                format!("sizeof {}", l.c_name),
                format!("sizeof({s})"),
                l.size as u64,
            );
            for (f, o) in &l.fields {
                self.line(
                    format!("offsetof {}.{f}", l.c_name),
                    format!("offsetof({s}, {f})"),
                    *o as u64,
                );
            }
        }
    }

    /// The program's source, and the values expected.
    pub(crate) fn finish(mut self) -> (String, BTreeMap<String, u64>) {
        self.c += "\treturn 0;\n}\n";
        (self.c, self.want)
    }
}

/// Checks the program's output `text` against `want`: every key printed
/// once, with the value Rust expects. `what` names the ABI in messages.
pub(crate) fn compare(what: &str, text: &str, want: &BTreeMap<String, u64>) {
    let mut got = BTreeMap::new();
    for l in text.lines() {
        let (k, v) = l.rsplit_once(' ').expect("key value");
        got.insert(k.to_string(), v.parse::<u64>().expect("number"));
    }
    let mut bad = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            Some(g) if g == v => {}
            g => bad.push(format!("{k}: C {g:?}, Rust {v}")),
        }
    }
    assert!(
        bad.is_empty(),
        "{what} layout differs from the C headers:\n{}",
        bad.join("\n")
    );
    assert_eq!(got.len(), want.len());
    eprintln!(
        "{what} layout: {} sizes, offsets and numbers agree with C",
        want.len()
    );
}
