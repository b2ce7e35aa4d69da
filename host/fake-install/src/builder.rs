//! Laying out a fake install on disk.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use zcode_contract::{Os, Platform};

use crate::launcher::{Identity, Runner, launcher_script};
use crate::layout::{
    APPIMAGE_FILES, CLI_ENTRY, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH,
    LayoutPaths, METADATA_FIELDS, METADATA_PLATFORM_KEY, PASEO_FAKE_ARCHIVE_SHA256, PASEO_MARKER,
    PROVIDER_CONFIG, PROVIDER_CONFIG_PATH, RUNTIME_AGENT_PATH, RUNTIME_BIN, RUNTIME_BIN_PATH,
    RUNTIME_DIR, RUNTIME_PACKAGE, RUNTIME_PACKAGE_NAME, RUNTIME_PROVIDER_CONFIG_PATH,
    RUNTIME_SERVER, RUNTIME_SERVER_PATH, WINDOWS_PRODUCT_CODE, WINDOWS_UNINSTALLER,
    bundles_provider_config, layout_paths, node_launcher, paseo_node_dir, paseo_node_executable,
    paseo_runtime_dir,
};
use crate::variant::{
    NEWER_APP_VERSION, NODE_VERSION, OLD_NODE_VERSION, Variant, WRONG_APP_VERSION,
    WRONG_CLI_VERSION,
};

#[derive(Debug, thiserror::Error)]
pub enum FakeInstallError {
    #[error("no runner given: the fake executable needs a program to hand invocations to")]
    NoRunner,
    #[error("refusing to lay out a fake install in {0}: the directory is not empty")]
    NotEmpty(PathBuf),
    #[error("variant `{variant}` does not apply to a {layout} install")]
    VariantNotForLayout { variant: Variant, layout: FakeLayout },
    #[error("{action} {path}: {source}")]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// Which kind of ZCode install to lay out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FakeLayout {
    /// The desktop app of the builder's OS: macOS `.app`, Linux `/opt/ZCode`, or Windows (with a
    /// recorded uninstall entry).
    #[default]
    Desktop,
    /// An extracted Linux AppImage (`squashfs-root/`): the Linux layout plus `AppRun`.
    AppImage,
    /// A standalone runtime folder: the runtime directory `zcode/` and a `node` beside it.
    Runtime,
    /// The Paseo ZCode plugin's managed runtimes folder: `node-v<ver>-<platform>/` and
    /// `zcode-<ver>-<sha12>/`, each with its marker. The builder's root is that folder.
    PaseoManaged,
}

impl FakeLayout {
    pub const ALL: [FakeLayout; 4] =
        [FakeLayout::Desktop, FakeLayout::AppImage, FakeLayout::Runtime, FakeLayout::PaseoManaged];

    pub fn name(self) -> &'static str {
        match self {
            FakeLayout::Desktop => "desktop",
            FakeLayout::AppImage => "appimage",
            FakeLayout::Runtime => "runtime",
            FakeLayout::PaseoManaged => "paseo",
        }
    }

    pub fn is_desktop(self) -> bool {
        matches!(self, FakeLayout::Desktop | FakeLayout::AppImage)
    }
}

impl std::fmt::Display for FakeLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for FakeLayout {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        FakeLayout::ALL.into_iter().find(|l| l.name() == name).ok_or_else(|| {
            format!("unknown layout `{name}` (expected desktop, appimage, runtime or paseo)")
        })
    }
}

/// Who a Windows install is for: the uninstall entry's hive and its uninstaller argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowsScope {
    #[default]
    PerUser,
    Machine,
}

/// A fake install on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltInstall {
    /// The folder the builder filled (canonical).
    pub root: PathBuf,
    /// What to point discovery at: the root, or the managed runtime entry of a Paseo folder.
    pub install_root: PathBuf,
    /// The Node of a runtime install (the standalone folder's `node`, or the managed one).
    pub node: Option<PathBuf>,
    /// A Windows install's uninstall entry as the registry would hold it (JSON object with
    /// `key`, `displayName`, `displayVersion`, `installLocation`, `uninstallString`).
    pub uninstall_entry: Option<serde_json::Value>,
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
            layout: FakeLayout::Desktop,
            windows_scope: WindowsScope::PerUser,
        }
    }
}

/// Settings of one fake install. Defaults: this process's OS and platform tag, app 3.11.2, a
/// desktop layout, [`Variant::Good`]. A runner is required. A desktop release from 3.12 on also
/// gets the built-in provider config beside its host archive.
#[derive(Clone, Debug)]
pub struct FakeInstallBuilder {
    root: PathBuf,
    os: Os,
    platform_tag: String,
    app_version: String,
    runner: Option<Runner>,
    variant: Variant,
    layout: FakeLayout,
    windows_scope: WindowsScope,
}

impl FakeInstallBuilder {
    pub fn os(mut self, os: Os) -> Self {
        self.os = os;
        self
    }

    /// The metadata `platform` value (and the managed Node's platform), e.g. `linux-x64`.
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

    pub fn layout(mut self, layout: FakeLayout) -> Self {
        self.layout = layout;
        self
    }

    pub fn windows_scope(mut self, scope: WindowsScope) -> Self {
        self.windows_scope = scope;
        self
    }

    /// Writes the install and returns its canonical root. The root must be absent or an
    /// empty directory, so that a mistyped path never overwrites anything.
    pub fn build(self) -> Result<PathBuf, FakeInstallError> {
        self.build_install().map(|built| built.install_root)
    }

    /// Writes the install and says where its pieces are.
    pub fn build_install(self) -> Result<BuiltInstall, FakeInstallError> {
        let runner = self.runner.as_ref().ok_or(FakeInstallError::NoRunner)?;
        if !self.variant.applies_to(self.layout.is_desktop()) {
            return Err(FakeInstallError::VariantNotForLayout {
                variant: self.variant,
                layout: self.layout,
            });
        }
        let root = prepare_root(&self.root)?;
        match self.layout {
            FakeLayout::Desktop | FakeLayout::AppImage => self.build_desktop(runner, root),
            FakeLayout::Runtime => {
                let runtime = root.join(RUNTIME_DIR);
                self.write_runtime_dir(&runtime)?;
                let node = root.join(node_launcher(self.os));
                self.write_node(runner, &root, &node)?;
                Ok(BuiltInstall {
                    install_root: root.clone(),
                    root,
                    node: Some(node),
                    uninstall_entry: None,
                })
            }
            FakeLayout::PaseoManaged => self.build_paseo(runner, root),
        }
    }

    fn build_desktop(
        &self,
        runner: &Runner,
        root: PathBuf,
    ) -> Result<BuiltInstall, FakeInstallError> {
        let os = if self.layout == FakeLayout::AppImage { Os::Linux } else { self.os };
        let paths = layout_paths(os);
        let variant = self.variant;

        let launcher = launcher_script(runner, &root, self.cli_version(), Identity::Electron);
        write(&root, paths.executable, &launcher)?;
        make_executable(&root.join(paths.executable))?;

        write(&root, paths.cli_entry, &self.cli_entry())?;
        write(&root, paths.metadata, &self.metadata(variant))?;
        self.write_host_archive(&root, &paths, variant)?;
        if bundles_provider_config(self.written_app_version()) {
            let config = format!("{}/{PROVIDER_CONFIG_PATH}", paths.resources());
            write(&root, &config, PROVIDER_CONFIG)?;
        }
        if let Some(plist) = paths.info_plist {
            write(&root, plist, info_plist(self.written_app_version()).as_bytes())?;
        }
        if self.layout == FakeLayout::AppImage {
            for file in APPIMAGE_FILES {
                write(&root, file, b"# extracted AppImage stand-in: never run\n")?;
            }
        }
        let uninstall_entry = match os {
            Os::Windows => {
                let uninstaller = root.join(WINDOWS_UNINSTALLER);
                write(&root, WINDOWS_UNINSTALLER, b"fake uninstaller: never run\n")?;
                Some(self.uninstall_entry(&uninstaller))
            }
            Os::Macos | Os::Linux => None,
        };
        Ok(BuiltInstall { install_root: root.clone(), root, node: None, uninstall_entry })
    }

    fn build_paseo(
        &self,
        runner: &Runner,
        root: PathBuf,
    ) -> Result<BuiltInstall, FakeInstallError> {
        let node_version = self.node_version();
        let node_dir = paseo_node_dir(node_version, &self.platform_tag);
        let node = root.join(&node_dir).join(paseo_node_executable(&self.platform_tag));
        let runtime = root.join(paseo_runtime_dir(self.written_app_version()));
        self.write_runtime_dir(&runtime)?;
        write(&runtime, PASEO_MARKER, &marker(self.written_app_version()))?;
        self.write_node(runner, &runtime, &node)?;
        write(&root, &format!("{node_dir}/{PASEO_MARKER}"), &marker(node_version))?;
        Ok(BuiltInstall { root, install_root: runtime, node: Some(node), uninstall_entry: None })
    }

    /// The runtime directory: package file, runner, Services Server, Agent and provider table.
    fn write_runtime_dir(&self, dir: &Path) -> Result<(), FakeInstallError> {
        let package = serde_json::json!({
            "name": RUNTIME_PACKAGE_NAME,
            "version": self.written_app_version(),
        });
        write(dir, RUNTIME_PACKAGE, package.to_string().as_bytes())?;
        write(dir, RUNTIME_BIN_PATH, RUNTIME_BIN)?;
        if self.variant != Variant::MissingFile {
            let mut server = RUNTIME_SERVER.to_vec();
            if self.variant == Variant::TamperedHostHash {
                server.push(b'\n');
            }
            write(dir, RUNTIME_SERVER_PATH, &server)?;
        }
        write(dir, RUNTIME_AGENT_PATH, &self.cli_entry())?;
        write(dir, RUNTIME_PROVIDER_CONFIG_PATH, PROVIDER_CONFIG)
    }

    /// A runtime's Node: a launcher that runs the runner for the install at `install_root`.
    fn write_node(
        &self,
        runner: &Runner,
        install_root: &Path,
        node: &Path,
    ) -> Result<(), FakeInstallError> {
        let identity = match self.variant {
            Variant::ElectronNode => Identity::Electron,
            _ => Identity::Node(self.node_version()),
        };
        let script = launcher_script(runner, install_root, self.cli_version(), identity);
        let parent = node.parent().expect("a Node path has a parent");
        let name = node.file_name().expect("a Node path has a name").to_string_lossy();
        write(parent, &name, &script)?;
        make_executable(node)
    }

    /// The app version the install's package files say (a variant may override the chosen one).
    fn written_app_version(&self) -> &str {
        match self.variant {
            Variant::WrongAppVersion => WRONG_APP_VERSION,
            Variant::NewerVersion => NEWER_APP_VERSION,
            _ => &self.app_version,
        }
    }

    fn cli_version(&self) -> Option<&'static str> {
        (self.variant == Variant::WrongCliVersion).then_some(WRONG_CLI_VERSION)
    }

    fn node_version(&self) -> &'static str {
        if self.variant == Variant::NodeTooOld { OLD_NODE_VERSION } else { NODE_VERSION }
    }

    fn cli_entry(&self) -> Vec<u8> {
        let mut cli = CLI_ENTRY.to_vec();
        if self.variant == Variant::ModifiedCli {
            cli.extend_from_slice(b"\n// locally modified\n");
        }
        cli
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
        let package = serde_json::json!({ "name": "zcode", "version": self.written_app_version() });
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

    /// The entry ZCode's installer leaves under `…\CurrentVersion\Uninstall`: since 3.14.5 it
    /// has no `InstallLocation`, and `UninstallString` quotes the uninstaller in the root.
    fn uninstall_entry(&self, uninstaller: &Path) -> serde_json::Value {
        let (hive, argument) = match self.windows_scope {
            WindowsScope::PerUser => ("HKCU", "/currentuser"),
            WindowsScope::Machine => ("HKLM", "/allusers"),
        };
        serde_json::json!({
            "key": format!(
                "{hive}\\Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\{WINDOWS_PRODUCT_CODE}"
            ),
            "displayName": format!("ZCode {}", self.written_app_version()),
            "displayVersion": self.written_app_version(),
            "installLocation": null,
            "uninstallString": format!("\"{}\" {argument}", uninstaller.display()),
        })
    }
}

fn marker(version: &str) -> Vec<u8> {
    serde_json::json!({ "version": version, "archiveSha256": PASEO_FAKE_ARCHIVE_SHA256 })
        .to_string()
        .into_bytes()
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

/// Writes a stand-in AppImage file at `path`: ELF magic and the AppImage type-2 magic
/// (`AI\x02` at offset 8), nothing runnable. Discovery must recognise it and never run it.
pub fn write_appimage_file(path: &Path) -> io::Result<()> {
    let mut bytes = b"\x7fELF\x02\x01\x01\x00AI\x02\x00\x00\x00\x00\x00".to_vec();
    bytes.extend_from_slice(b"fake AppImage: not a program\n");
    fs::write(path, bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}
