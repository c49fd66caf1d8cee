//! Links libhvd: HVD_LIB_DIR (a directory holding libhvd.so) when set, otherwise
//! the flags `pkg-config --libs hvd` prints. No registry crates are used.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=HVD_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = env::var("HVD_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-lib=dylib=hvd");
        // Examples run from the build tree find the library without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        return;
    }
    let out = Command::new("pkg-config")
        .args(["--libs", "hvd"])
        .output()
        .expect("running pkg-config (install pkg-config, or set HVD_LIB_DIR)");
    if !out.status.success() {
        panic!(
            "pkg-config cannot find hvd: install libhvd (meson install) or set HVD_LIB_DIR: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}
