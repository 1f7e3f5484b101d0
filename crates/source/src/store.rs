//! Building a store client from the standard environment, one per bucket, and the one
//! runtime its requests run on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::error::SourceError;
use crate::location::{ObjectUrl, Scheme};

/// The runtime the object stores' requests run on: two I/O threads are plenty for a few
/// dozen concurrent ranged GETs; the decoding runs on the caller's threads.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bagscope-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts (threads and timers only)")
    })
}

/// Runs `fut` to completion on the I/O runtime, from a thread that is not one of its own.
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}

/// The retry policy of every request: 5xx, 429, timeouts and refused or cut connections are
/// retried with exponential backoff (object_store's own retry layer; a body cut mid-way is
/// resumed there when the object has an ETag).
fn retry_config() -> RetryConfig {
    let max_retries = env_u64("BAGSCOPE_REMOTE_RETRIES").unwrap_or(6) as usize;
    RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries,
        retry_timeout: Duration::from_secs(120),
    }
}

fn client_options(url: &ObjectUrl) -> ClientOptions {
    let timeout = env_u64("BAGSCOPE_REMOTE_TIMEOUT_S").unwrap_or(60);
    let allow_http = url.url().scheme() == "http"
        || ["AWS_ALLOW_HTTP", "AZURE_ALLOW_HTTP", "GOOGLE_ALLOW_HTTP"]
            .iter()
            .any(|k| env_true(k));
    ClientOptions::new()
        .with_allow_http(allow_http)
        .with_timeout(Duration::from_secs(timeout))
        .with_connect_timeout(Duration::from_secs(10))
}

pub(crate) fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok())
}

fn env_true(key: &str) -> bool {
    std::env::var(key).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "True"))
}

fn env_set(key: &str) -> bool {
    std::env::var_os(key).is_some_and(|v| !v.is_empty())
}

/// The store client for `url`'s bucket (built once per scheme and bucket, then shared).
pub(crate) fn store_for(url: &ObjectUrl) -> Result<Arc<dyn ObjectStore>, SourceError> {
    type Key = (String, String);
    static STORES: OnceLock<Mutex<HashMap<Key, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let base = base_url(url);
    let key = (format!("{:?}", url.scheme), base.clone());
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(s) = stores.get(&key) {
        return Ok(s.clone());
    }
    let err = |e: object_store::Error| SourceError::Store {
        url: url.to_string(),
        detail: format!("cannot configure the store client: {e}"),
    };
    let store: Arc<dyn ObjectStore> = match url.scheme {
        Scheme::S3 => Arc::new(
            object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(url.bucket())
                .with_retry(retry_config())
                .with_client_options(client_options(url))
                .build()
                .map_err(err)?,
        ),
        Scheme::Gcs => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(url.bucket())
                .with_retry(retry_config())
                .with_client_options(client_options(url))
                .build()
                .map_err(err)?,
        ),
        Scheme::Azure => Arc::new(
            object_store::azure::MicrosoftAzureBuilder::from_env()
                .with_url(base.clone())
                .with_retry(retry_config())
                .with_client_options(client_options(url))
                .build()
                .map_err(err)?,
        ),
        Scheme::Http => Arc::new(
            object_store::http::HttpBuilder::new()
                .with_url(base.clone())
                .with_retry(retry_config())
                .with_client_options(client_options(url))
                .build()
                .map_err(err)?,
        ),
    };
    stores.insert(key, store.clone());
    Ok(store)
}

/// The part of the URL a store client is built for: scheme, bucket (or host and port).
fn base_url(url: &ObjectUrl) -> String {
    let u = url.url();
    match u.port() {
        Some(p) => format!("{}://{}:{p}", u.scheme(), u.host_str().unwrap_or("")),
        None => format!("{}://{}", u.scheme(), u.host_str().unwrap_or("")),
    }
}

/// The object's path inside its store.
pub(crate) fn store_path(url: &ObjectUrl) -> object_store::path::Path {
    object_store::path::Path::from(url.key())
}

/// Which credential source a request used, by the names of what is set (never a value).
pub(crate) fn credential_sources(scheme: Scheme) -> String {
    let set = |keys: &[&str]| -> Vec<String> {
        keys.iter()
            .filter(|k| env_set(k))
            .map(|k| k.to_string())
            .collect()
    };
    let (found, fallback) = match scheme {
        Scheme::S3 => (
            set(&[
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_SKIP_SIGNATURE",
            ]),
            "none in the environment, so the instance metadata service was asked",
        ),
        Scheme::Gcs => (
            set(&[
                "GOOGLE_APPLICATION_CREDENTIALS",
                "GOOGLE_SERVICE_ACCOUNT",
                "GOOGLE_SERVICE_ACCOUNT_PATH",
                "GOOGLE_SERVICE_ACCOUNT_KEY",
            ]),
            "none in the environment, so application default credentials / the metadata server were asked",
        ),
        Scheme::Azure => (
            set(&[
                "AZURE_STORAGE_ACCOUNT_NAME",
                "AZURE_STORAGE_ACCOUNT_KEY",
                "AZURE_STORAGE_SAS_KEY",
                "AZURE_STORAGE_TOKEN",
                "AZURE_CLIENT_ID",
                "AZURE_CLIENT_SECRET",
                "AZURE_TENANT_ID",
                "AZURE_FEDERATED_TOKEN_FILE",
            ]),
            "none in the environment, so managed identity was asked",
        ),
        Scheme::Http => (Vec::new(), "none (plain HTTP)"),
    };
    if found.is_empty() {
        fallback.to_string()
    } else {
        format!("{} from the environment", found.join(", "))
    }
}
