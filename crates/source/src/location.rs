//! Telling a URL of an object store from a local path, and naming objects without secrets.

use crate::error::SourceError;

/// The object stores bagscope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Amazon S3 and S3-compatible servers (`s3://bucket/key`, `s3a://`).
    S3,
    /// Google Cloud Storage (`gs://bucket/key`).
    Gcs,
    /// Azure Blob Storage (`az://container/key`, `azure://container/key`; the account from
    /// `AZURE_STORAGE_ACCOUNT_NAME`).
    Azure,
    /// Plain HTTP(S) (`https://host/path`): range requests, no listing.
    Http,
}

/// An object (or a prefix of objects) in an object store, as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    /// Which store.
    pub scheme: Scheme,
    /// The URL the store is built from (user info and query removed).
    url: url::Url,
    /// The key inside the bucket or container (for HTTP: the path), without leading `/`.
    key: String,
}

/// The URL schemes recognised as remote, in the form users write them.
const PREFIXES: [(&str, Scheme); 7] = [
    ("s3://", Scheme::S3),
    ("s3a://", Scheme::S3),
    ("gs://", Scheme::Gcs),
    ("az://", Scheme::Azure),
    ("azure://", Scheme::Azure),
    ("http://", Scheme::Http),
    ("https://", Scheme::Http),
];

/// Whether `s` names an object store (by its scheme) rather than a local path.
pub fn is_remote(s: &str) -> bool {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    PREFIXES.iter().any(|(p, _)| lower.starts_with(p))
}

impl ObjectUrl {
    /// Parses `s` when it names an object store: `None` for a local path, an error for a URL
    /// that cannot name an object (no bucket, a query string holding credentials, ...).
    pub fn parse(s: &str) -> Option<Result<ObjectUrl, SourceError>> {
        if !is_remote(s) {
            return None;
        }
        Some(Self::parse_remote(s))
    }

    fn parse_remote(s: &str) -> Result<ObjectUrl, SourceError> {
        let shown = redact(s);
        let invalid = |reason: &str| SourceError::InvalidUrl {
            url: shown.clone(),
            reason: reason.to_string(),
        };
        let lower = s.to_ascii_lowercase();
        let scheme = PREFIXES
            .iter()
            .find(|(p, _)| lower.starts_with(p))
            .map(|(_, k)| *k)
            .ok_or_else(|| invalid("unknown scheme"))?;
        // The URL parser removes dot segments ("b/../k" becomes "k"): looked for in the text
        // as given, so a key is never silently another one.
        let raw_path = s
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('/'))
            .map_or("", |(_, p)| p.split(['?', '#']).next().unwrap_or(""));
        if percent_decode(raw_path)
            .split('/')
            .any(|p| p == ".." || p == ".")
        {
            return Err(invalid("'.' and '..' are not object key segments"));
        }
        let mut url = url::Url::parse(s).map_err(|e| invalid(&e.to_string()))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "credentials in the URL are not accepted (they would show in outputs): use the environment (AWS_ACCESS_KEY_ID, ...)",
            ));
        }
        if url.query().is_some() {
            return Err(invalid(
                "query strings are not supported (a presigned URL's signature would show in outputs)",
            ));
        }
        url.set_fragment(None);
        let host = url.host_str().unwrap_or("").to_string();
        if host.is_empty() {
            return Err(invalid(match scheme {
                Scheme::Http => "no host",
                _ => "no bucket or container",
            }));
        }
        let key = percent_decode(url.path().trim_start_matches('/'));
        if key.split('/').any(|p| p == ".." || p == ".") {
            return Err(invalid("'.' and '..' are not object key segments"));
        }
        Ok(ObjectUrl { scheme, url, key })
    }

    /// The key inside the bucket or container (for HTTP: the URL's path), no leading `/`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The bucket or container (for HTTP: the host).
    pub fn bucket(&self) -> &str {
        self.url.host_str().unwrap_or("")
    }

    /// The URL of `rel` (a `/`-separated path) under this one taken as a prefix.
    pub fn join(&self, rel: &str) -> ObjectUrl {
        let base = self.key.trim_end_matches('/');
        let key = if base.is_empty() {
            rel.to_string()
        } else {
            format!("{base}/{rel}")
        };
        let mut url = self.url.clone();
        url.set_path(&format!("/{key}"));
        ObjectUrl {
            scheme: self.scheme,
            url,
            key,
        }
    }

    /// The prefix form of this URL: its key ending in `/` (empty: the bucket's root).
    pub fn as_prefix(&self) -> ObjectUrl {
        let mut out = self.clone();
        if !out.key.is_empty() && !out.key.ends_with('/') {
            out.key.push('/');
            out.url.set_path(&format!("/{}", out.key));
        }
        out
    }

    /// The last segment of the key (a file name).
    pub fn file_name(&self) -> &str {
        self.key
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
    }

    /// The URL as outputs show it.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    pub(crate) fn url(&self) -> &url::Url {
        &self.url
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// `s` without anything that may hold a secret (user info, query), for error messages about
/// URLs that did not parse.
pub fn redact(s: &str) -> String {
    let s = s.split(['?', '#']).next().unwrap_or(s);
    match s.find("://") {
        Some(i) => {
            let (scheme, rest) = s.split_at(i + 3);
            let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = auth.rsplit('@').next().unwrap_or(auth);
            format!("{scheme}{host}{path}")
        }
        None => s.to_string(),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_schemes_are_told_from_paths() {
        for s in [
            "s3://b/k.mcap",
            "S3://b/k",
            "gs://b/k",
            "az://c/k",
            "azure://c/k",
            "https://h/p.mcap",
            "http://127.0.0.1:9000/b/k",
        ] {
            assert!(is_remote(s), "{s}");
        }
        for s in ["bags/arm", "/tmp/s3://x", "s3:/b", "file.mcap", ""] {
            assert!(!is_remote(s), "{s}");
        }
    }

    #[test]
    fn keys_buckets_and_joins() {
        let u = ObjectUrl::parse("s3://fleet/run%201/bag.mcap")
            .unwrap()
            .unwrap();
        assert_eq!(u.scheme, Scheme::S3);
        assert_eq!(u.bucket(), "fleet");
        assert_eq!(u.key(), "run 1/bag.mcap");
        assert_eq!(u.file_name(), "bag.mcap");
        let p = ObjectUrl::parse("gs://b/run/").unwrap().unwrap();
        assert_eq!(p.join("metadata.yaml").key(), "run/metadata.yaml");
        let a = ObjectUrl::parse("azure://c/x").unwrap().unwrap();
        assert_eq!(a.scheme, Scheme::Azure);
        assert_eq!(a.as_prefix().key(), "x/");
    }

    #[test]
    fn secrets_never_reach_the_name() {
        for s in [
            "https://user:pw@h/p.mcap",
            "https://h/p.mcap?X-Amz-Signature=abc",
        ] {
            let e = ObjectUrl::parse(s).unwrap().unwrap_err().to_string();
            assert!(!e.contains("pw") && !e.contains("abc"), "{e}");
        }
        assert_eq!(redact("https://u:p@h/x?sig=1"), "https://h/x");
        assert!(ObjectUrl::parse("s3:///k").unwrap().is_err());
        assert!(ObjectUrl::parse("s3://b/../k").unwrap().is_err());
    }
}
