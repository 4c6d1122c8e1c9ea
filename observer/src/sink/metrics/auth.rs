//! HTTP basic auth against a web-config file's `basic_auth_users` (user
//! name to bcrypt hash), as exporter-toolkit checks it: an unknown user
//! costs the same bcrypt round as a known one, and each password that
//! matched is cached, so a scrape every 15 s costs one bcrypt round per
//! password, not per scrape, however many wrong guesses come in between
//! (they are never cached, so they cannot evict it). bcrypt runs off the
//! agent's thread (tokio's blocking pool), one check at a time, even when
//! the client that asked for it has gone, so a client guessing passwords
//! takes at most one core and never stalls the poll loop.

use std::{
    collections::{BTreeMap, HashSet},
    sync::{Arc, Mutex},
};

use base64::Engine as _;
use hyper::header::HeaderValue;
use subtle::ConstantTimeEq as _;

/// Most matching passwords cached (a wrong one is never cached: only
/// someone who knows many passwords fills it); the cache starts afresh
/// when full.
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
    /// SHA-256 of (user, hash, password) of the pairs that matched.
    cache: Mutex<HashSet<[u8; 32]>>,
    /// One bcrypt round at a time: held by the round itself, so a client
    /// that leaves does not let the next round start beside its own.
    bcrypt: Arc<tokio::sync::Mutex<()>>,
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
            cache: Mutex::new(HashSet::new()),
            bcrypt: Arc::new(tokio::sync::Mutex::new(())),
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
        if self.matched(&key) {
            return found.is_some();
        }
        let one = self.bcrypt.clone().lock_owned().await;
        // Another request may have checked the same while this one waited.
        if self.matched(&key) {
            return found.is_some();
        }
        // The round keeps the lock until it ends, even if this request is
        // dropped (its client gone) while it runs.
        let ok = tokio::task::spawn_blocking(move || {
            let _one = one;
            bcrypt::verify(password, &hash)
        })
        .await
        .is_ok_and(|r| r.unwrap_or(false));
        if ok {
            let mut cache = self
                .cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(key);
        }
        ok && found.is_some()
    }

    /// Whether the pair `key` names matched before.
    fn matched(&self, key: &[u8; 32]) -> bool {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(key)
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
    use crate::testkit::runtime::block_on;

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
    fn a_matching_password_is_cached_and_guesses_never_evict_it() {
        let a = auth();
        block_on(async {
            assert!(a.allows(Some(&header("prom", "s3cret"))).await);
            assert!(!a.allows(Some(&header("prom", "bad"))).await);
            // Only the match is kept: a wrong password is never cached.
            let key = |u: &str, p: &str| cache_key(u, &a.users[1].1, p);
            assert_eq!(a.users[1].0, "prom");
            assert_eq!(a.cache.lock().unwrap().len(), 1);
            assert!(a.matched(&key("prom", "s3cret")));
            // A guesser trying more passwords than the cache holds: the
            // match stays cached, and the cache does not grow.
            for i in 0..CACHE_ENTRIES + 10 {
                assert!(!a.allows(Some(&header("nobody", &i.to_string()))).await);
                assert!(!a.allows(Some(&header("prom", &i.to_string()))).await);
            }
            assert_eq!(a.cache.lock().unwrap().len(), 1);
            assert!(a.matched(&key("prom", "s3cret")));
            assert!(a.allows(Some(&header("prom", "s3cret"))).await);
        });
    }
}
