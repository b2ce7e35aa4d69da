//! Load-time checks on a component's imports and exports, before anything is instantiated.

use crate::error::LoadFailure;

/// The WIT package this core implements, and the versions of it that it accepts: the same
/// major and minor (`0.1.x`), as WIT packages before 1.0 break compatibility on minor bumps.
pub(crate) const WIT_PACKAGE: &str = "zcode:mapper";
pub(crate) const SUPPORTED_WIT: (u64, u64) = (0, 1);
const MAPPER_INTERFACE: &str = "zcode:mapper/mapper";

/// Imports a mapper may have. `wasi:io` and `wasi:cli` come from Rust's wasip2 standard
/// library even in a mapper that does no I/O; they are linked as traps. Anything else
/// (filesystem, sockets, clocks, random, http, ...) is refused at load.
const ALLOWED_IMPORT_PREFIXES: &[&str] = &["zcode:mapper/", "wasi:io/", "wasi:cli/"];

pub(crate) fn supported_wit() -> String {
    format!("{}.{}.x", SUPPORTED_WIT.0, SUPPORTED_WIT.1)
}

/// Refuses a component that does not export the mapper interface in a supported WIT version,
/// or that imports `zcode:mapper` interfaces of another version.
pub(crate) fn check_wit_version<'a>(
    imports: impl IntoIterator<Item = &'a str>,
    exports: impl IntoIterator<Item = &'a str>,
) -> Result<(), LoadFailure> {
    let exports: Vec<&str> = exports.into_iter().collect();
    let Some(mapper) = exports.iter().find(|name| interface_of(name) == MAPPER_INTERFACE) else {
        return Err(LoadFailure::NotAMapper(exports.join(", ")));
    };
    check_version(mapper)?;
    for import in imports {
        if import.starts_with(WIT_PACKAGE) && import[WIT_PACKAGE.len()..].starts_with('/') {
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
        .filter(|name| !ALLOWED_IMPORT_PREFIXES.iter().any(|prefix| name.starts_with(prefix)))
        .map(str::to_string)
        .collect();
    if refused.is_empty() { Ok(()) } else { Err(LoadFailure::ForbiddenImports(refused)) }
}

/// `zcode:mapper/mapper@0.1.0` -> `zcode:mapper/mapper`.
fn interface_of(name: &str) -> &str {
    name.split_once('@').map_or(name, |(interface, _)| interface)
}

fn check_version(name: &str) -> Result<(), LoadFailure> {
    let version = name.split_once('@').map(|(_, version)| version);
    let found = version.map(major_minor);
    if found == Some(Some(SUPPORTED_WIT)) {
        return Ok(());
    }
    Err(LoadFailure::WitVersion {
        found: version.unwrap_or("(unversioned)").to_string(),
        supported: supported_wit(),
    })
}

/// `0.1.3` or `0.1.0-rc1` -> (0, 1); anything unparsable -> None.
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
        &["zcode:mapper/types@0.1.0", "zcode:mapper/host@0.1.0", "wasi:io/streams@0.2.6"];

    #[test]
    fn accepts_patch_versions_of_the_supported_wit() {
        let exports = ["zcode:mapper/mapper@0.1.7"];
        assert!(check_wit_version(MAPPER_IMPORTS.iter().copied(), exports).is_ok());
    }

    #[test]
    fn refuses_another_minor_or_major_version() {
        for version in ["0.2.0", "1.1.0", "0.0.9", "garbage"] {
            let export = format!("zcode:mapper/mapper@{version}");
            let err = check_wit_version([], [export.as_str()]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("mapper built for WIT zcode:mapper@{version}, this core supports 0.1.x")
            );
        }
    }

    #[test]
    fn refuses_host_imports_of_another_version() {
        let imports = ["zcode:mapper/host@0.3.0"];
        let err = check_wit_version(imports, ["zcode:mapper/mapper@0.1.0"]).unwrap_err();
        assert!(matches!(err, LoadFailure::WitVersion { found, .. } if found == "0.3.0"));
    }

    #[test]
    fn refuses_a_component_without_the_mapper_export() {
        let err = check_wit_version([], ["wasi:cli/run@0.2.6"]).unwrap_err();
        assert!(err.to_string().contains("wasi:cli/run@0.2.6"), "{err}");
    }

    #[test]
    fn supported_version_matches_the_wit_file() {
        let wit = include_str!("../../../wit/mapper.wit");
        let package = format!("package {WIT_PACKAGE}@{}.{}.", SUPPORTED_WIT.0, SUPPORTED_WIT.1);
        assert!(wit.contains(&package), "wit/mapper.wit does not declare `{package}*`");
    }

    #[test]
    fn allows_only_the_mapper_package_and_std_plumbing() {
        assert!(check_imports(MAPPER_IMPORTS.iter().copied()).is_ok());
        let imports = [
            "wasi:cli/stdout@0.2.6",
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
