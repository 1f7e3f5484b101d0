#![allow(dead_code)]
use std::path::PathBuf;

pub(crate) fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub(crate) fn text(name: &str) -> String {
    String::from_utf8(data(name)).unwrap()
}

/// Compare decoded JSON against the Python reference with float tolerance.
pub(crate) fn assert_json_close(got: &serde_json::Value, want: &serde_json::Value, path: &str) {
    use serde_json::Value as J;
    match (got, want) {
        (J::Number(a), J::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let tol = 1e-6 * a.abs().max(b.abs()).max(1e-30);
            assert!((a - b).abs() <= tol, "{path}: {a} != {b}");
        }
        (J::Bool(a), J::Number(b)) | (J::Number(b), J::Bool(a)) => {
            assert_eq!(*a as u64 as f64, b.as_f64().unwrap(), "{path}")
        }
        (J::Null, J::String(s)) | (J::String(s), J::Null) => {
            // serde_json writes NaN/inf as null; Python side stored a string.
            assert!(s == "nan" || s.contains("inf"), "{path}: {s}");
        }
        (J::Array(a), J::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_json_close(x, y, &format!("{path}[{i}]"));
            }
        }
        (J::Object(a), J::Object(b)) => {
            for (k, v) in b {
                let g = a.get(k).unwrap_or_else(|| panic!("{path}.{k} missing"));
                assert_json_close(g, v, &format!("{path}.{k}"));
            }
            assert_eq!(a.len(), b.len(), "{path}: field count");
        }
        (a, b) => assert_eq!(a, b, "{path}"),
    }
}

#[allow(unused_imports)]
pub(crate) use bagscope_testkit::shared_path;
