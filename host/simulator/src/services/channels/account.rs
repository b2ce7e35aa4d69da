//! Sign-in (`oauth`) and app settings (`setting`). Sign-in completes on the first poll after
//! it started: the simulated browser never waits. Signing in writes the same fake credentials
//! file as the CLI's `login`; signing out removes it and makes the models disappear.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{CallResult, RpcError};
use crate::common::auth;
use crate::common::store::write_atomically;
use crate::services::server::Server;

pub const OAUTH_METHODS: &[&str] = &[
    "restoreCachedSessionState",
    "getActiveProvider",
    "startOAuthWithPolling",
    "pollPendingOAuth",
    "cancelPending",
    "logout",
];
pub const SETTING_METHODS: &[&str] = &["get", "update"];

const FAMILIES: &[&str] = &["zai", "bigmodel"];

pub fn oauth(server: &Server, method: &str, args: &[Option<Value>]) -> Option<CallResult> {
    let signed_out = server.is_signed_out();
    let result = match method {
        "restoreCachedSessionState" => Ok(Some(if signed_out {
            json!({"status": "signed-out"})
        } else {
            json!({"status": "authenticated",
                   "userInfo": {"username": "sim-user", "displayName": "Simulated User", "id": "sim-user-1"}})
        })),
        "getActiveProvider" => Ok(Some(if signed_out { Value::Null } else { json!("zai") })),
        "startOAuthWithPolling" => start(server, args),
        "pollPendingOAuth" => poll(server),
        "cancelPending" => {
            server.pending_oauth.lock().expect("oauth lock").take();
            Ok(None)
        }
        "logout" => auth::logout().map_err(RpcError::new).map(|()| {
            server.signed_out.store(true, Ordering::SeqCst);
            None
        }),
        _ => return None,
    };
    Some(result)
}

fn start(server: &Server, args: &[Option<Value>]) -> CallResult {
    let family =
        args.first().and_then(|arg| arg.as_ref()).and_then(Value::as_str).unwrap_or_default();
    if !FAMILIES.contains(&family) {
        return Err(RpcError::new(format!(
            "startOAuthWithPolling: unknown provider family {family:?}"
        )));
    }
    let mut pending = server.pending_oauth.lock().expect("oauth lock");
    if pending.is_some() {
        return Err(RpcError::new("startOAuthWithPolling: a sign-in is already pending"));
    }
    *pending = Some(family.to_owned());
    let code = uuid::Uuid::new_v4().simple().to_string();
    Ok(Some(
        json!({"authorizeUrl": format!("https://sim.invalid/oauth/authorize?provider={family}&code={}", &code[..12])}),
    ))
}

fn poll(server: &Server) -> CallResult {
    let Some(family) = server.pending_oauth.lock().expect("oauth lock").take() else {
        return Ok(Some(Value::Null));
    };
    auth::login().map_err(RpcError::new)?;
    server.signed_out.store(false, Ordering::SeqCst);
    Ok(Some(json!({"kind": "session", "provider": family})))
}

pub fn setting(server: &Server, method: &str, args: &[Option<Value>]) -> Option<CallResult> {
    let path = server.store.settings_path();
    let mut settings = server.settings.lock().expect("settings lock");
    if settings.as_object().is_some_and(|object| object.is_empty())
        && let Some(saved) =
            std::fs::read(&path).ok().and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    {
        *settings = saved;
    }
    let result = match method {
        "get" => Ok(Some(settings.clone())),
        "update" => match args.first().and_then(|arg| arg.as_ref()).and_then(Value::as_object) {
            None => Err(RpcError::new("update: expected an object patch")),
            Some(patch) => {
                if let Some(object) = settings.as_object_mut() {
                    object.extend(patch.clone());
                }
                let bytes = serde_json::to_vec(&*settings).expect("serializable");
                write_atomically(&path, &bytes).map_err(RpcError::new).map(|()| None)
            }
        },
        _ => return None,
    };
    Some(result)
}
