//! HTTP basic auth against a web-config file's `basic_auth_users` (user
//! name to bcrypt hash), as exporter-toolkit checks it: an unknown user
//! costs the same bcrypt round as a known one, and each outcome is cached,
//! so a scrape every 15 s costs one bcrypt round per password, not per
//! scrape. bcrypt runs off the agent's thread (tokio's blocking pool), one
//! check at a time, so a client guessing passwords takes at most one core
//! and never stalls the poll loop.

use std::{collections::BTreeMap, collections::HashMap, sync::Mutex};

use base64::Engine as _;
use hyper::header::HeaderValue;
use subtle::ConstantTimeEq as _;

/// Most outcomes cached; the cache starts afresh when full, so a client
/// trying many passwords cannot grow it.
const CACHE_ENTRIES: usize = 256;

/// Highest bcrypt cost of the stand-in hash that unknown users are checked
/// against (cost 12 takes 367 ms in a release build on two cores).
const MAX_DUMMY_COST: u32 = 12;

/// The users and their hashes, with the cache of checked passwords.
pub struct BasicAuth {
    users: Vec<(String, String)>,
    /// What an unknown user's password is checked against, so that the
    /// answer takes as long as for a known one.
    dummy: String,
    /// SHA-256 of (user, hash, password) to whether they matched.
    cache: Mutex<HashMap<[u8; 32], bool>>,
    /// One bcrypt round at a time.
    bcrypt: tokio::sync::Mutex<()>,
}

impl BasicAuth {
    /// The check for `users`; None when there are none (no auth).
    pub fn new(users: &BTreeMap<String, String>) -> Option<BasicAuth> {
        let cost = users
            .values()
            .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
            .map(|p| p.get_cost())
            .max()?
            .min(MAX_DUMMY_COST);
        // The stand-in's password is never compared: its result is ignored.
        let dummy = bcrypt::hash("observer: no such user", cost).unwrap_or_default();
        Some(BasicAuth {
            users: users.iter().map(|(u, h)| (u.clone(), h.clone())).collect(),
            dummy,
            cache: Mutex::new(HashMap::new()),
            bcrypt: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether `authorization` (the request's header) names a user and
    /// their password.
    pub async fn allows(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some((user, password)) = authorization.and_then(credentials) else {
            return false;
        };
        // Every user compared, in constant time for equal lengths, so the
        // time taken does not tell which names exist.
        let mut found: Option<&str> = None;
        for (name, hash) in &self.users {
            if bool::from(name.as_bytes().ct_eq(user.as_bytes())) {
                found = Some(hash);
            }
        }
        let hash = found.unwrap_or(&self.dummy).to_string();
        let key = cache_key(&user, &hash, &password);
        if let Some(ok) = self.cached(&key) {
            return ok && found.is_some();
        }
        let _one = self.bcrypt.lock().await;
        // Another request may have checked the same while this one waited.
        if let Some(ok) = self.cached(&key) {
            return ok && found.is_some();
        }
        let ok = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash))
            .await
            .is_ok_and(|r| r.unwrap_or(false));
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, ok);
        ok && found.is_some()
    }

    fn cached(&self, key: &[u8; 32]) -> Option<bool> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .copied()
    }
}

/// The user and password of a `Basic` authorization header.
fn credentials(h: &HeaderValue) -> Option<(String, String)> {
    let text = h.to_str().ok()?;
    let (scheme, b64) = text.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// SHA-256 of the three, each prefixed with its length (so that no two
/// triples give the same input).
fn cache_key(user: &str, hash: &str, password: &str) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [user, hash, password] {
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part.as_bytes());
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, password: &str) -> HeaderValue {
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        HeaderValue::from_str(&format!("Basic {b64}")).unwrap()
    }

    fn auth() -> BasicAuth {
        let users = BTreeMap::from([
            ("prom".to_string(), bcrypt::hash("s3cret", 4).unwrap()),
            ("other".to_string(), bcrypt::hash("x", 4).unwrap()),
        ]);
        BasicAuth::new(&users).unwrap()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn no_users_is_no_auth() {
        assert!(BasicAuth::new(&BTreeMap::new()).is_none());
    }

    #[test]
    fn only_the_right_password_of_a_known_user_passes() {
        let a = auth();
        block_on(async {
            assert!(a.allows(Some(&header("prom", "s3cret"))).await);
            assert!(!a.allows(Some(&header("prom", "wrong"))).await);
            assert!(!a.allows(Some(&header("other", "s3cret"))).await);
            assert!(!a.allows(Some(&header("nobody", "s3cret"))).await);
            assert!(!a.allows(Some(&header("", ""))).await);
            assert!(!a.allows(None).await);
            let bearer = HeaderValue::from_static("Bearer abc");
            assert!(!a.allows(Some(&bearer)).await);
            let junk = HeaderValue::from_static("Basic !!!");
            assert!(!a.allows(Some(&junk)).await);
            // The scheme is case-insensitive.
            let b64 = base64::engine::general_purpose::STANDARD.encode("prom:s3cret");
            let lower = HeaderValue::from_str(&format!("basic {b64}")).unwrap();
            assert!(a.allows(Some(&lower)).await);
        });
    }

    #[test]
    fn a_checked_password_is_cached_and_the_cache_is_bounded() {
        let a = auth();
        block_on(async {
            assert!(a.allows(Some(&header("prom", "s3cret"))).await);
            assert!(!a.allows(Some(&header("prom", "bad"))).await);
            assert_eq!(a.cache.lock().unwrap().len(), 2);
            // Again: answered from the cache (its size does not move).
            assert!(a.allows(Some(&header("prom", "s3cret"))).await);
            assert_eq!(a.cache.lock().unwrap().len(), 2);
            for i in 0..CACHE_ENTRIES + 10 {
                a.allows(Some(&header("nobody", &i.to_string()))).await;
            }
            assert!(a.cache.lock().unwrap().len() <= CACHE_ENTRIES);
        });
    }

    #[test]
    fn a_cached_check_is_faster_than_bcrypt() {
        let users = BTreeMap::from([("prom".to_string(), bcrypt::hash("pw", 10).unwrap())]);
        let a = BasicAuth::new(&users).unwrap();
        block_on(async {
            let t = std::time::Instant::now();
            assert!(a.allows(Some(&header("prom", "pw"))).await);
            let first = t.elapsed();
            let t = std::time::Instant::now();
            assert!(a.allows(Some(&header("prom", "pw"))).await);
            let second = t.elapsed();
            assert!(second * 10 < first, "first {first:?}, cached {second:?}");
        });
    }
}
