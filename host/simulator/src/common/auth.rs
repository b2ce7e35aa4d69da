//! ZCode sign-in state as the simulator sees it: the CLI's credentials file and the
//! `ZCODE_SIM_SIGNED_OUT` switch that makes the host report no usable provider.

use std::io::Write;
use std::path::PathBuf;

/// Credentials file relative to the home directory (reference §1.7).
const CREDENTIALS_FILE: &str = ".zcode/v2/credentials.json";

/// `ZCODE_SIM_HOME` when set (tests must not touch the real home), else `HOME`.
pub fn credentials_path() -> Result<PathBuf, String> {
    let home = std::env::var_os("ZCODE_SIM_HOME")
        .or_else(|| std::env::var_os("HOME"))
        .ok_or("neither ZCODE_SIM_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(CREDENTIALS_FILE))
}

/// True when the host must behave as if no model provider were configured.
pub fn signed_out() -> bool {
    std::env::var("ZCODE_SIM_SIGNED_OUT").is_ok_and(|value| value == "1")
}

/// Writes a fake credentials file (mode 0600) and returns the sign-in URL that was "opened".
pub fn login() -> Result<String, String> {
    let path = credentials_path()?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    }
    let code = uuid::Uuid::new_v4().simple().to_string();
    let token = serde_json::json!({
        "accessToken": format!("sim-token-{code}"),
        "provider": "zcode-simulator",
        "issuedAt": crate::common::clock::now_ms(),
    });
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file =
        options.open(&path).map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    // An existing file keeps its mode on open; force 0600 like a fresh one.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|error| format!("cannot chmod {}: {error}", path.display()))?;
    }
    file.write_all(token.to_string().as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(format!("https://sim.invalid/login?code={}", &code[..12]))
}

/// Removes the credentials file; absent is fine.
pub fn logout() -> Result<(), String> {
    let path = credentials_path()?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(format!("cannot remove {}: {error}", path.display())),
    }
}

/// `present` / `missing`, as discovery would report it.
pub fn credentials_state() -> &'static str {
    match credentials_path().map(std::fs::metadata) {
        Ok(Ok(metadata)) if metadata.is_file() && metadata.len() > 0 => "present",
        _ => "missing",
    }
}
