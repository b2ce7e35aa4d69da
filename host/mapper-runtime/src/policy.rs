//! Load-time checks on a component's imports and exports, before anything is instantiated.

use crate::error::LoadFailure;

/// `zcode:mapper`: the WIT package of `zcode_contract::WIT_PACKAGE`.
const PACKAGE: &str = "zcode:mapper";

/// Interfaces of the package a mapper may import: its types, and logging (the only capability
/// a mapper gets from the core).
const PACKAGE_IMPORTS: &[&str] = &["zcode:mapper/types", "zcode:mapper/logging"];

/// Other imports a mapper may have. `wasi:io` and `wasi:cli` come from Rust's wasip2 standard
/// library even in a mapper that does no I/O; they are linked as traps. Anything else
/// (filesystem, sockets, clocks, random, http, ...) is refused at load.
const ALLOWED_IMPORT_PREFIXES: &[&str] = &["wasi:io/", "wasi:cli/"];

const MAPPER_INTERFACE: &str = "zcode:mapper/mapper";

/// The version this core speaks, from `zcode_contract::WIT_PACKAGE` (`0.4.0`).
fn core_version() -> &'static str {
    let (package, version) =
        zcode_contract::WIT_PACKAGE.split_once('@').expect("WIT_PACKAGE names a version");
    debug_assert_eq!(package, PACKAGE);
    version
}

/// Refuses a component that does not export the mapper interface in the WIT version this core
/// speaks, or that imports `zcode:mapper` interfaces of another version. WIT packages before
/// 1.0 break compatibility on minor bumps, so the major and minor must match; a patch version
/// loads (wasmtime matches semver-compatible names).
pub(crate) fn check_wit_version<'a>(
    imports: impl IntoIterator<Item = &'a str>,
    exports: impl IntoIterator<Item = &'a str>,
) -> Result<(), LoadFailure> {
    let exports: Vec<&str> = exports.into_iter().collect();
    let Some(mapper) = exports.iter().find(|name| interface_of(name) == MAPPER_INTERFACE) else {
        return Err(LoadFailure::NotAMapper(exports.iter().map(|name| name.to_string()).collect()));
    };
    check_version(mapper)?;
    for import in imports {
        if import.strip_prefix(PACKAGE).is_some_and(|rest| rest.starts_with('/')) {
            check_version(import)?;
        }
    }
    Ok(())
}

/// Refuses a component with imports outside the allowlist, naming every one of them.
pub(crate) fn check_imports<'a>(
    imports: impl IntoIterator<Item = &'a str>,
) -> Result<(), LoadFailure> {
    let refused: Vec<String> = imports
        .into_iter()
        .filter(|name| {
            !PACKAGE_IMPORTS.contains(&interface_of(name))
                && !ALLOWED_IMPORT_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        })
        .map(str::to_string)
        .collect();
    if refused.is_empty() { Ok(()) } else { Err(LoadFailure::ForbiddenImports(refused)) }
}

/// `zcode:mapper/mapper@0.2.0` -> `zcode:mapper/mapper`.
fn interface_of(name: &str) -> &str {
    name.split_once('@').map_or(name, |(interface, _)| interface)
}

fn check_version(name: &str) -> Result<(), LoadFailure> {
    let version = name.split_once('@').map(|(_, version)| version);
    let found = version.and_then(major_minor);
    let needed = major_minor(core_version()).expect("WIT_PACKAGE has a semver version");
    if found == Some(needed) {
        return Ok(());
    }
    let age = match found {
        Some(found) if found < needed => WitAge::Older,
        Some(_) => WitAge::Newer,
        None => WitAge::Unknown,
    };
    let found = match version {
        Some(version) => format!("{PACKAGE}@{version}"),
        None => format!("{PACKAGE} without a version"),
    };
    Err(LoadFailure::WitVersion { found, needed: zcode_contract::WIT_PACKAGE.to_string(), age })
}

/// How a mapper's WIT version relates to the core's: it says what to do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitAge {
    /// Built for an earlier WIT: the mapper must be rebuilt.
    Older,
    /// Built for a later WIT: zcode-acp must be updated.
    Newer,
    /// Not a version this core can read.
    Unknown,
}

impl WitAge {
    pub(crate) fn advice(self) -> &'static str {
        match self {
            WitAge::Older => "rebuild the mapper against this core's wit/mapper.wit",
            WitAge::Newer => "the mapper needs a newer zcode-acp",
            WitAge::Unknown => "it is not a version of the mapper contract",
        }
    }
}

/// `0.2.3` or `0.2.0-rc1` -> (0, 2); anything unparsable -> None.
fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPPER_IMPORTS: &[&str] =
        &["zcode:mapper/types@0.4.0", "zcode:mapper/logging@0.4.0", "wasi:io/streams@0.2.6"];

    #[test]
    fn accepts_patch_versions_of_the_core_wit() {
        let exports = ["zcode:mapper/mapper@0.4.7"];
        assert!(check_wit_version(MAPPER_IMPORTS.iter().copied(), exports).is_ok());
    }

    #[test]
    fn refuses_another_minor_or_major_version_saying_what_to_do() {
        for (version, advice) in [
            ("0.1.0", "rebuild the mapper against this core's wit/mapper.wit"),
            ("0.2.0", "rebuild the mapper against this core's wit/mapper.wit"),
            ("0.0.9", "rebuild the mapper against this core's wit/mapper.wit"),
            ("0.3.0", "rebuild the mapper against this core's wit/mapper.wit"),
            ("0.5.0", "the mapper needs a newer zcode-acp"),
            ("1.1.0", "the mapper needs a newer zcode-acp"),
            ("garbage", "it is not a version of the mapper contract"),
        ] {
            let export = format!("zcode:mapper/mapper@{version}");
            let err = check_wit_version([], [export.as_str()]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "it speaks WIT zcode:mapper@{version}, but this core speaks \
                     zcode:mapper@0.4.0: {advice}"
                )
            );
        }
        let err = check_wit_version([], ["zcode:mapper/mapper"]).unwrap_err();
        assert!(err.to_string().starts_with("it speaks WIT zcode:mapper without a version,"));
    }

    #[test]
    fn refuses_package_imports_of_another_version() {
        let imports = ["zcode:mapper/logging@0.5.0"];
        let err = check_wit_version(imports, ["zcode:mapper/mapper@0.4.0"]).unwrap_err();
        assert!(
            matches!(&err, LoadFailure::WitVersion { found, .. } if found == "zcode:mapper@0.5.0"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_component_without_the_mapper_export() {
        let err = check_wit_version([], ["wasi:cli/run@0.2.6"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it does not export the zcode:mapper/mapper interface (its exports: wasi:cli/run@0.2.6)"
        );
        let err = check_wit_version([], []).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it does not export the zcode:mapper/mapper interface (it exports nothing)"
        );
    }

    #[test]
    fn the_core_version_is_the_package_line_of_the_wit_file() {
        let wit = include_str!("../../../wit/mapper.wit");
        let package = format!("package {};", zcode_contract::WIT_PACKAGE);
        assert!(wit.contains(&package), "wit/mapper.wit does not declare `{package}`");
    }

    #[test]
    fn allows_only_the_mapper_types_logging_and_std_plumbing() {
        assert!(check_imports(MAPPER_IMPORTS.iter().copied()).is_ok());
        let imports = [
            "wasi:cli/stdout@0.2.6",
            "zcode:mapper/host@0.2.0",
            "wasi:filesystem/preopens@0.2.6",
            "wasi:sockets/tcp@0.2.6",
            "wasi:clocks/wall-clock@0.2.6",
            "wasi:random/random@0.2.6",
        ];
        let LoadFailure::ForbiddenImports(refused) = check_imports(imports).unwrap_err() else {
            panic!("wrong failure");
        };
        assert_eq!(refused, &imports[1..]);
    }
}
