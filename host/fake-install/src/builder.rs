//! Laying out a fake install on disk.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use zcode_contract::{Os, Platform};

use crate::launcher::{Runner, launcher_script};
use crate::layout::{
    CLI_ENTRY, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH, LayoutPaths,
    METADATA_FIELDS, METADATA_PLATFORM_KEY, PROVIDER_CONFIG, PROVIDER_CONFIG_PATH,
    bundles_provider_config, layout_paths,
};
use crate::variant::{Variant, WRONG_APP_VERSION, WRONG_CLI_VERSION};

#[derive(Debug, thiserror::Error)]
pub enum FakeInstallError {
    #[error("no runner given: the fake executable needs a program to hand invocations to")]
    NoRunner,
    #[error("refusing to lay out a fake install in {0}: the directory is not empty")]
    NotEmpty(PathBuf),
    #[error("{action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// Entry point: `FakeInstall::builder(root)…build()`.
pub struct FakeInstall;

impl FakeInstall {
    pub fn builder(root: impl Into<PathBuf>) -> FakeInstallBuilder {
        let current = Platform::current();
        FakeInstallBuilder {
            root: root.into(),
            os: current.os.unwrap_or(Os::Linux),
            platform_tag: current.tag(),
            app_version: "3.11.2".to_string(),
            runner: None,
            variant: Variant::Good,
        }
    }
}

/// Settings of one fake install. Defaults: this process's OS and platform tag, app 3.11.2,
/// [`Variant::Good`]. A runner is required. A 3.12 release also gets the built-in provider
/// config beside its host archive.
#[derive(Clone, Debug)]
pub struct FakeInstallBuilder {
    root: PathBuf,
    os: Os,
    platform_tag: String,
    app_version: String,
    runner: Option<Runner>,
    variant: Variant,
}

impl FakeInstallBuilder {
    pub fn os(mut self, os: Os) -> Self {
        self.os = os;
        self
    }

    /// The metadata `platform` value, e.g. `linux-x64`.
    pub fn platform_tag(mut self, tag: impl Into<String>) -> Self {
        self.platform_tag = tag.into();
        self
    }

    pub fn app_version(mut self, version: impl Into<String>) -> Self {
        self.app_version = version.into();
        self
    }

    pub fn runner(mut self, runner: Runner) -> Self {
        self.runner = Some(runner);
        self
    }

    pub fn variant(mut self, variant: Variant) -> Self {
        self.variant = variant;
        self
    }

    /// Writes the install and returns its canonical root. The root must be absent or an
    /// empty directory, so that a mistyped path never overwrites anything.
    pub fn build(self) -> Result<PathBuf, FakeInstallError> {
        let runner = self.runner.as_ref().ok_or(FakeInstallError::NoRunner)?;
        let root = prepare_root(&self.root)?;
        let paths = layout_paths(self.os);
        let variant = self.variant;

        let cli_version = (variant == Variant::WrongCliVersion).then_some(WRONG_CLI_VERSION);
        let launcher = launcher_script(runner, &root, cli_version);
        write(&root, paths.executable, &launcher)?;
        make_executable(&root.join(paths.executable))?;

        let mut cli = CLI_ENTRY.to_vec();
        if variant == Variant::ModifiedCli {
            cli.extend_from_slice(b"\n// locally modified\n");
        }
        write(&root, paths.cli_entry, &cli)?;
        write(&root, paths.metadata, &self.metadata(variant))?;
        self.write_host_archive(&root, &paths, variant)?;
        if bundles_provider_config(&self.app_version) {
            let config = format!("{}/{PROVIDER_CONFIG_PATH}", paths.resources());
            write(&root, &config, PROVIDER_CONFIG)?;
        }
        if let Some(plist) = paths.info_plist {
            write(&root, plist, info_plist(&self.app_version).as_bytes())?;
        }
        Ok(root)
    }

    fn metadata(&self, variant: Variant) -> Vec<u8> {
        let mut object = serde_json::Map::new();
        for (key, value) in METADATA_FIELDS {
            object.insert(key.to_string(), value.into());
        }
        let platform = match variant {
            Variant::WrongPlatform => other_platform(&self.platform_tag),
            _ => self.platform_tag.clone(),
        };
        object.insert(METADATA_PLATFORM_KEY.to_string(), platform.into());
        if variant == Variant::ExtraMetadataKey {
            object.insert("channel".to_string(), "beta".into());
        }
        let mut text = serde_json::Value::Object(object).to_string().into_bytes();
        text.push(b'\n');
        text
    }

    fn write_host_archive(
        &self,
        root: &Path,
        paths: &LayoutPaths,
        variant: Variant,
    ) -> Result<(), FakeInstallError> {
        let app_version = match variant {
            Variant::WrongAppVersion => WRONG_APP_VERSION,
            _ => &self.app_version,
        };
        let package = serde_json::json!({ "name": "zcode", "version": app_version });
        let archive = paths.host_archive;
        write(root, &format!("{archive}/package.json"), package.to_string().as_bytes())?;

        let mut index = HOST_INDEX.to_vec();
        if variant == Variant::TamperedHostHash {
            index.push(b'\n');
        }
        write(root, &format!("{archive}/{HOST_INDEX_PATH}"), &index)?;
        if variant != Variant::MissingFile {
            write(root, &format!("{archive}/{HOST_RPC_CHUNK_PATH}"), HOST_RPC_CHUNK)?;
        }
        Ok(())
    }
}

fn prepare_root(root: &Path) -> Result<PathBuf, FakeInstallError> {
    let io_err = |action, source| FakeInstallError::Io { action, path: root.to_path_buf(), source };
    fs::create_dir_all(root).map_err(|e| io_err("cannot create", e))?;
    let mut entries = fs::read_dir(root).map_err(|e| io_err("cannot list", e))?;
    if entries.next().is_some() {
        return Err(FakeInstallError::NotEmpty(root.to_path_buf()));
    }
    fs::canonicalize(root).map_err(|e| io_err("cannot resolve", e))
}

/// Writes `bytes` at the `/`-separated `relative` path under `root`, creating directories.
fn write(root: &Path, relative: &str, bytes: &[u8]) -> Result<(), FakeInstallError> {
    let path = relative.split('/').fold(root.to_path_buf(), |path, part| path.join(part));
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| FakeInstallError::Io {
            action: "cannot create",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    fs::write(&path, bytes).map_err(|source| FakeInstallError::Io {
        action: "cannot write",
        path,
        source,
    })
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), FakeInstallError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|source| {
        FakeInstallError::Io { action: "cannot make executable", path: path.to_path_buf(), source }
    })
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), FakeInstallError> {
    Ok(())
}

/// A real platform tag that differs from `tag`.
fn other_platform(tag: &str) -> String {
    if tag == "darwin-arm64" { "linux-x64" } else { "darwin-arm64" }.to_string()
}

fn info_plist(app_version: &str) -> String {
    let app_version = app_version.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
         \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n\
         \t<key>CFBundleShortVersionString</key>\n\t<string>{app_version}</string>\n\
         \t<key>CFBundleVersion</key>\n\t<string>{app_version}.0</string>\n\
         </dict>\n</plist>\n"
    )
}
