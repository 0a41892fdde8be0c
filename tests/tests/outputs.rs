//! Outputs as users name them (issue 13, D1-D3 and D13): `-o`, inject `-o` and `--sites`
//! write to what the path names (a link's target, a FIFO or device in place), refuse an
//! output that is one of the inputs or a read-only file (exit 2, nothing touched), and a
//! standard output that cannot be written is an error (exit 2), a closed pipe is not.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn corpus(name: &str) -> PathBuf {
    repo_root().join("tests/corpus/obj").join(name)
}

/// A copy of a corpus object in `dir`.
fn object_in(dir: &Path) -> PathBuf {
    let p = dir.join("x.o");
    fs::copy(corpus("launch_stamp.v3.o"), &p).unwrap();
    p
}

fn bpf2ptx(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(bpf2ptx_bin()).args(args).output().unwrap()
}

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

#[test]
fn a_symlink_output_writes_its_target_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let obj = object_in(dir.path());
    let real = dir.path().join("real.ptx");
    fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.ptx");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = bpf2ptx(&[obj.as_os_str(), "-o".as_ref(), link.as_os_str()]);
    assert_eq!(code(&o), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&real).unwrap().contains(".visible"));
}

#[test]
fn a_fifo_output_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let obj = object_in(dir.path());
    let fifo = dir.path().join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo not available");
        return;
    }
    let copy = dir.path().join("copy.ptx");
    let mut reader = Command::new("sh")
        .arg("-c")
        .arg(format!("cat '{}' > '{}'", fifo.display(), copy.display()))
        .spawn()
        .unwrap();
    let o = bpf2ptx(&[obj.as_os_str(), "-o".as_ref(), fifo.as_os_str()]);
    reader.wait().unwrap();
    assert_eq!(code(&o), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(fs::read_to_string(&copy).unwrap().contains(".visible"));
}

#[test]
fn an_output_that_is_the_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let obj = object_in(dir.path());
    let before = fs::read(&obj).unwrap();
    // The same path, another spelling of it, and a hard link to it.
    let other = dir.path().join(".").join("x.o");
    let hard = dir.path().join("hard.o");
    fs::hard_link(&obj, &hard).unwrap();
    for out in [&obj, &other, &hard] {
        let o = bpf2ptx(&[obj.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        assert_eq!(code(&o), Some(2), "{}", out.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("same file as"), "{err}");
        assert_eq!(fs::read(&obj).unwrap(), before, "{}", out.display());
    }
    // inject: the output may be neither the probe nor the application.
    let probe = dir.path().join("p.o");
    fs::copy(repo_root().join("examples/probes/warp_time.bpf.o"), &probe).unwrap();
    let app = dir.path().join("app.ptx");
    fs::copy(repo_root().join("examples/apps/vecadd.ptx"), &app).unwrap();
    let (probe0, app0) = (fs::read(&probe).unwrap(), fs::read(&app).unwrap());
    for out in [&probe, &app] {
        let o = bpf2ptx(&[
            "inject".as_ref(),
            probe.as_os_str(),
            "--into".as_ref(),
            app.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(code(&o), Some(2), "{}", out.display());
    }
    let sites = bpf2ptx(&[
        "inject".as_ref(),
        probe.as_os_str(),
        "--into".as_ref(),
        app.as_os_str(),
        "-o".as_ref(),
        dir.path().join("out.ptx").as_os_str(),
        "--sites".as_ref(),
        probe.as_os_str(),
    ]);
    assert_eq!(code(&sites), Some(2));
    assert_eq!(fs::read(&probe).unwrap(), probe0);
    assert_eq!(fs::read(&app).unwrap(), app0);
}

#[test]
fn a_read_only_output_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let obj = object_in(dir.path());
    let out = dir.path().join("ro.ptx");
    fs::write(&out, "keep").unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o444)).unwrap();
    let o = bpf2ptx(&[obj.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code(&o), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("read-only"));
    assert_eq!(fs::read_to_string(&out).unwrap(), "keep");
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o444
    );
}

#[test]
fn an_existing_output_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let obj = object_in(dir.path());
    let out = dir.path().join("o.ptx");
    fs::write(&out, "old").unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).unwrap();
    let o = bpf2ptx(&[obj.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(code(&o), Some(0));
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

#[test]
fn a_full_standard_output_is_an_error_a_closed_pipe_is_not() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let obj = corpus("rt_maps.v3.o").into_os_string();
    let stamp = corpus("launch_stamp.v3.o").into_os_string();
    for args in [
        vec!["dump".into(), obj.clone()],
        vec!["verify".into(), obj.clone()],
        vec![stamp, "-o".into(), "-".into()],
    ] {
        let o = Command::new(bpf2ptx_bin())
            .args(&args)
            .stdout(Stdio::from(
                fs::OpenOptions::new().write(true).open(full).unwrap(),
            ))
            .output()
            .unwrap();
        assert_eq!(
            code(&o),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // A reader that stops early (a closed pipe) is not an error.
    let mut child = Command::new(bpf2ptx_bin())
        .args(["dump".into(), obj])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
