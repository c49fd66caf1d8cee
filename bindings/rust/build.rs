//! Links libhvd, and checks that the hand-written declarations of src/ffi.rs match
//! include/hvd/hvd.h. No registry crates are used.
//!
//! Linking: HVD_LIB_DIR (a directory holding libhvd.so) when set, otherwise the
//! flags `pkg-config --libs hvd` prints. Where neither finds libhvd the script does
//! not fail: documentation (`cargo doc`, docs.rs, which sets DOCS_RS) needs no
//! library, and a build script cannot tell a doc build from a build that links. It
//! prints a cargo warning instead, and a binary that links the crate then fails at
//! its link step, after that warning.
//!
//! The check: every `pub const` of src/ffi.rs, the size and alignment of every
//! `pub type` alias, the size, alignment and field offsets of its structs, and the
//! type of every function it declares become `_Static_assert`s in a C file that the
//! C compiler ($CC, else cc) compiles against the header; a difference fails the
//! build and names the declaration. The header is taken from HVD_INCLUDE_DIR, else
//! from the source tree this crate lives in (../../include); where neither holds
//! hvd/hvd.h (a copy of the crate outside the tree) the check is skipped with a
//! warning.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)]
#[path = "src/ffi.rs"]
mod ffi;

fn main() {
    link();
    check_declarations();
}

fn link() {
    println!("cargo:rerun-if-env-changed=HVD_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = env::var("HVD_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-lib=dylib=hvd");
        // Examples run from the build tree find the library without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        return;
    }
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    if env::var_os("DOCS_RS").is_some() {
        return; // docs.rs builds documentation only, without libhvd
    }
    let out = match Command::new("pkg-config").args(["--libs", "hvd"]).output() {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            let why = String::from_utf8_lossy(&out.stderr);
            let why = why.lines().next().unwrap_or("").trim();
            println!(
                "cargo:warning=libhvd is not linked: pkg-config cannot find hvd ({why}); \
                 set HVD_LIB_DIR to the directory of libhvd.so (a build tree's lib/), or \
                 install libhvd (meson install) and set PKG_CONFIG_PATH. Documentation \
                 builds without it; programs do not link."
            );
            return;
        }
        Err(e) => {
            println!(
                "cargo:warning=libhvd is not linked: cannot run pkg-config ({e}); set \
                 HVD_LIB_DIR to the directory of libhvd.so, or install pkg-config. \
                 Documentation builds without it; programs do not link."
            );
            return;
        }
    };
    for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}

fn check_declarations() {
    println!("cargo:rerun-if-changed=src/ffi.rs");
    println!("cargo:rerun-if-env-changed=HVD_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=CC");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let include = match env::var("HVD_INCLUDE_DIR") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => manifest.join("../../include"),
    };
    let header = include.join("hvd/hvd.h");
    if !header.is_file() {
        println!(
            "cargo:warning=hvd/hvd.h not found under {} (set HVD_INCLUDE_DIR): \
             src/ffi.rs is not checked against the header",
            include.display()
        );
        return;
    }
    println!("cargo:rerun-if-changed={}", header.display());

    let source = fs::read_to_string(manifest.join("src/ffi.rs")).expect("reading src/ffi.rs");
    let mut c = String::from("#include <stddef.h>\n#include <stdint.h>\n#include <hvd/hvd.h>\n");
    constants(&source, &mut c);
    functions(&source, &mut c);
    layouts(&mut c);

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let file = out_dir.join("ffi_check.c");
    fs::write(&file, &c).expect("writing ffi_check.c");
    compile(&file, &include);
}

fn compile(file: &Path, include: &Path) {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c11", "-fsyntax-only", "-I"])
        .arg(include)
        .arg(file)
        .output();
    match out {
        Err(e) => println!(
            "cargo:warning=cannot run the C compiler {cc:?} ({e}): src/ffi.rs is not checked \
             against hvd/hvd.h"
        ),
        Ok(out) if !out.status.success() => panic!(
            "src/ffi.rs does not match {}/hvd/hvd.h (checked by {}):\n{}",
            include.display(),
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Ok(_) => {}
    }
}

fn assert_line(c: &mut String, condition: &str, message: &str) {
    let message = message.replace('\\', "\\\\").replace('"', "\\\"");
    c.push_str(&format!("_Static_assert({condition}, \"bindings/rust/src/ffi.rs: {message}\");\n"));
}

/// `pub const NAME: TYPE = VALUE;` (one line each): the header's NAME equals VALUE.
fn constants(source: &str, c: &mut String) {
    for line in source.lines().map(str::trim) {
        let rest = match line.strip_prefix("pub const ") {
            Some(rest) => rest,
            None => continue,
        };
        let name = rest.split(':').next().unwrap().trim();
        let value = rest
            .split('=')
            .nth(1)
            .unwrap_or_else(|| panic!("src/ffi.rs: cannot read the value of {name}"))
            .trim()
            .trim_end_matches(';')
            .trim();
        assert_line(c, &format!("({name}) == ({value})"), &format!("{name} = {value}"));
    }
}

/// The C spelling of a Rust type of src/ffi.rs.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(rest) = rust.strip_prefix("*const ") {
        return format!("{} const*", c_type(rest));
    }
    if let Some(rest) = rust.strip_prefix("*mut ") {
        return format!("{}*", c_type(rest));
    }
    match rust {
        "c_int" => "int".into(),
        "c_char" => "char".into(),
        "c_void" => "void".into(),
        "c_double" => "double".into(),
        "i32" => "int32_t".into(),
        "i64" => "int64_t".into(),
        "u8" => "uint8_t".into(),
        "u64" => "uint64_t".into(),
        "usize" => "size_t".into(),
        name if name.starts_with("hvd_") => name.into(),
        other => panic!("build.rs: no C spelling for the Rust type {other:?} of src/ffi.rs"),
    }
}

/// Type aliases and every function of the `extern "C"` block: the header's function
/// has exactly the type the Rust declaration spells.
fn functions(source: &str, c: &mut String) {
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub type ") {
            let mut parts = rest.splitn(2, '=');
            let name = parts.next().unwrap().trim();
            let ty = parts.next().unwrap_or("").trim().trim_end_matches(';').trim();
            if ty.is_empty() || ty.starts_with("Option<") {
                continue; // function pointers: checked through the struct holding them
            }
            let cty = c_type(ty);
            assert_line(c, &format!("sizeof({name}) == sizeof({cty})"), &format!("{name} = {ty}"));
        }
    }
    let start = source.find("extern \"C\" {").expect("src/ffi.rs: no extern \"C\" block");
    let block: String = source[start..]
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    for item in block.split("pub fn ").skip(1) {
        let open = item.find('(').unwrap();
        let name = item[..open].trim();
        let close = open + item[open..].find(')').unwrap();
        let params: Vec<String> = item[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_type(p.splitn(2, ':').nth(1).unwrap()))
            .collect();
        let tail = &item[close + 1..item.find(';').unwrap()];
        let ret = match tail.trim().strip_prefix("->") {
            Some(ty) => c_type(ty),
            None => "void".to_string(),
        };
        let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
        let spelled = format!("{ret} (*)({params})");
        assert_line(
            c,
            &format!("__builtin_types_compatible_p(__typeof__(&{name}), {spelled})"),
            &format!("{name} is declared as {spelled}"),
        );
    }
}

fn pointee_size<T>(_: *const T) -> usize {
    std::mem::size_of::<T>()
}

/// Size, alignment and each field's offset and size. The destructuring makes the
/// build fail where a struct of src/ffi.rs gains a field this list lacks.
macro_rules! layout {
    ($c:ident, $t:ident { $($f:ident),* $(,)? }) => {{
        #[allow(dead_code)]
        fn exhaustive(v: ffi::$t) {
            let ffi::$t { $($f: _),* } = v;
        }
        let t = stringify!($t);
        let size = std::mem::size_of::<ffi::$t>();
        let align = std::mem::align_of::<ffi::$t>();
        assert_line($c, &format!("sizeof({t}) == {size}"), &format!("sizeof({t}) is {size}"));
        assert_line($c, &format!("_Alignof({t}) == {align}"), &format!("_Alignof({t}) is {align}"));
        let u = std::mem::MaybeUninit::<ffi::$t>::uninit();
        let base = u.as_ptr() as usize;
        $(
            // SAFETY: only the field's address is taken; nothing is read.
            let p = unsafe { std::ptr::addr_of!((*u.as_ptr()).$f) };
            let f = stringify!($f);
            let offset = p as usize - base;
            let fsize = pointee_size(p);
            assert_line($c, &format!("offsetof({t}, {f}) == {offset}"),
                &format!("{t}.{f} is at offset {offset}"));
            assert_line($c, &format!("sizeof((({t}*)0)->{f}) == {fsize}"),
                &format!("{t}.{f} has {fsize} bytes"));
        )*
    }};
}

fn layouts(c: &mut String) {
    layout!(c, hvd_op_options_t {
        struct_size, prescale_factor, postscale_factor, device, process_set_id, stream,
        allocator, allocator_user_data, shape, ndim, reserved_pad, reserved,
    });
    layout!(c, hvd_counters_t {
        struct_size, global_bytes, local_bytes, cross_bytes, collectives, negotiation_rounds,
        speculative, ring_allreduces, core_round_trip_ns, far_cores, back_to_back, reserved,
    });
    layout!(c, hvd_step_stats_t {
        struct_size, steps, warmup_steps, step_seconds, exposed_wait_seconds,
        negotiate_seconds, copy_seconds, transfer_seconds, bytes_per_step, bus_bandwidth,
        reference_bus_bandwidth, enabled, reserved_pad, reserved,
    });
    layout!(c, hvd_step_tensor_t { name, wait_seconds });
}
