//! ZCode's Linux AppImage. zcode-acp never runs an AppImage: mounted, its files move on every
//! launch (`/tmp/.mount_ZCode*/`), and running it starts the app. The user extracts it once
//! (`--appimage-extract` yields `squashfs-root/`, which has the `/opt/ZCode` layout) and points
//! zcode-acp at the extracted folder. This module recognises an AppImage, finds the ones lying
//! in the usual places, and says how to extract them.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The AppImage type-2 magic at offset 8 of the file (after the ELF magic).
const MAGIC: &[u8; 3] = b"AI\x02";
/// Folders under `$HOME` where AppImages usually lie.
const USUAL_PLACES: [&str; 5] = ["Applications", "Downloads", "Desktop", ".local/bin", "AppImages"];

/// Whether `path` is an AppImage file: named `*.AppImage`, or carrying the type-2 magic.
pub fn is_appimage(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    let named = path
        .extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| ext.eq_ignore_ascii_case("appimage"));
    named || has_magic(path)
}

fn has_magic(path: &Path) -> bool {
    let mut head = [0u8; 11];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| &head[..4] == b"\x7fELF" && &head[8..11] == MAGIC)
}

/// ZCode AppImages (`ZCode*.AppImage`, any case) in the usual places under `home`.
pub fn find_appimages(home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for place in USUAL_PLACES {
        let dir = place.split('/').fold(home.to_path_buf(), |dir, part| dir.join(part));
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut here: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                let lower = name.to_ascii_lowercase();
                lower.starts_with("zcode") && lower.ends_with(".appimage") && path.is_file()
            })
            .collect();
        here.sort();
        found.extend(here);
    }
    found
}

/// How to extract `appimage` and point zcode-acp at the result.
pub fn extraction_hint(appimage: &Path) -> String {
    let folder = appimage.parent().unwrap_or(Path::new("."));
    let extracted = folder.join("squashfs-root");
    format!(
        "zcode-acp does not run an AppImage. Extract it once: `cd {} && {} --appimage-extract` \
         (this writes {}, and starts nothing), then point zcode-acp at the extracted folder: \
         --zcode-install {}. Extract again after ZCode updates the AppImage.",
        shell_word(folder),
        shell_word(appimage),
        extracted.display(),
        shell_word(&extracted)
    )
}

/// `path` quoted for a POSIX shell when it needs it.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b));
    if plain && !text.is_empty() { text } else { format!("'{}'", text.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_appimages_by_name_or_magic() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("ZCode-3.14.4-linux-x64.AppImage");
        std::fs::write(&named, b"anything").unwrap();
        assert!(is_appimage(&named));
        let magic = dir.path().join("zcode");
        std::fs::write(&magic, b"\x7fELF\x02\x01\x01\x00AI\x02rest").unwrap();
        assert!(is_appimage(&magic));
        let elf = dir.path().join("node");
        std::fs::write(&elf, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00rest").unwrap();
        assert!(!is_appimage(&elf));
        assert!(!is_appimage(dir.path()));
    }

    #[test]
    fn finds_zcode_appimages_in_the_usual_places_and_says_how_to_extract() {
        let home = tempfile::tempdir().unwrap();
        let apps = home.path().join("Applications");
        std::fs::create_dir_all(&apps).unwrap();
        std::fs::create_dir_all(home.path().join("Downloads")).unwrap();
        std::fs::write(apps.join("ZCode-3.14.4-linux-x64.AppImage"), b"").unwrap();
        std::fs::write(apps.join("Other.AppImage"), b"").unwrap();
        std::fs::write(home.path().join("Downloads/zcode.appimage"), b"").unwrap();
        let found = find_appimages(home.path());
        assert_eq!(
            found,
            [
                apps.join("ZCode-3.14.4-linux-x64.AppImage"),
                home.path().join("Downloads/zcode.appimage")
            ]
        );
        let hint = extraction_hint(Path::new("/home/ada/My Apps/ZCode.AppImage"));
        assert!(
            hint.contains(
                "`cd '/home/ada/My Apps' && '/home/ada/My Apps/ZCode.AppImage' --appimage-extract`"
            ),
            "{hint}"
        );
        assert!(hint.contains("--zcode-install '/home/ada/My Apps/squashfs-root'"), "{hint}");
    }
}
