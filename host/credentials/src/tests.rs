use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zcode_contract::{AesGcmEncoding, CredentialEncoding, CredentialLookup};

use super::*;

/// ZCode-style `enc:v1:` forms, then protected forms the core cannot read, then the clear.
fn encodings(key_env: &str) -> Vec<CredentialEncoding> {
    vec![
        CredentialEncoding::AesGcm(AesGcmEncoding {
            prefix: "enc:v1:".into(),
            key_env: key_env.into(),
            fallback_seed: "seed:{platform}:{home}:{user}".into(),
        }),
        CredentialEncoding::Unreadable("enc:".into()),
        CredentialEncoding::Plain,
    ]
}

fn encrypt(seed: &str, clear: &str) -> String {
    let key: [u8; 32] = Sha256::digest(seed.as_bytes()).into();
    let iv = [7u8; 12];
    let sealed = Aes256Gcm::new_from_slice(&key)
        .unwrap()
        .encrypt(Nonce::from_slice(&iv), clear.as_bytes())
        .unwrap();
    let (data, tag) = sealed.split_at(sealed.len() - 16);
    let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    format!("enc:v1:{}.{}.{}", b64(&iv), b64(tag), b64(data))
}

const PLACEHOLDER: &str = "@@secret@@";

fn source() -> CredentialSource {
    CredentialSource {
        name: "plan-key".into(),
        file: ".zcode/v2/credentials.json".into(),
        key: "provider:{provider}:user:{uid}:key".into(),
        lookups: vec![CredentialLookup {
            name: "uid".into(),
            key: "profile:{family}".into(),
            field: "id".into(),
        }],
        encodings: encodings("ZCODE_ACP_TEST_UNSET_KEY"),
    }
}

fn write(args: &[(&str, &str)]) -> NativeWrite {
    let bytes = format!(r#"{{"id":"s-1","result":{{"apiKey":"{PLACEHOLDER}"}}}}"#).into_bytes();
    NativeWrite {
        bytes,
        label: "provider headers".into(),
        secret: Some(SecretFill {
            placeholder: PLACEHOLDER.into(),
            source: "plan-key".into(),
            args: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            fallback: br#"{"id":"s-1","result":{"refused":true}}"#.to_vec(),
        }),
    }
}

fn home_with(credentials: &Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".zcode/v2")).unwrap();
    std::fs::write(home.path().join(".zcode/v2/credentials.json"), credentials.to_string())
        .unwrap();
    home
}

fn args() -> [(&'static str, &'static str); 2] {
    [("provider", "coding-plan:bigmodel"), ("family", "bigmodel")]
}

#[test]
fn fills_the_value_through_a_lookup_and_escapes_it_for_json() {
    let home = home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": "k\"ey\\1",
    }));
    let store = CredentialStore::new(home.path(), vec![source()]);
    let bytes = store.fill(&write(&args())).unwrap();
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(reply["result"]["apiKey"], "k\"ey\\1");
}

#[test]
fn writes_the_fallback_when_the_credential_cannot_be_had() {
    let fallback = br#"{"id":"s-1","result":{"refused":true}}"#.to_vec();
    let missing_entry = home_with(&serde_json::json!({"profile:bigmodel": "{\"id\":\"u42\"}"}));
    let protected = home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": "enc:v1:aa.bb.cc",
    }));
    let no_file = tempfile::tempdir().unwrap();
    for home in [missing_entry.path(), protected.path(), no_file.path()] {
        let store = CredentialStore::new(home, vec![source()]);
        assert_eq!(store.fill(&write(&args())).unwrap(), fallback, "{}", home.display());
    }
    // A placeholder with no value is not a guess either.
    let store = CredentialStore::new(protected.path(), vec![source()]);
    assert_eq!(store.fill(&write(&[("family", "bigmodel")])).unwrap(), fallback);
}

#[test]
fn refuses_writes_the_mapper_got_wrong() {
    let store = CredentialStore::new("/nonexistent", vec![source()]);
    let mut unknown = write(&args());
    unknown.secret.as_mut().unwrap().source = "other".into();
    assert!(matches!(store.fill(&unknown), Err(FillError::UnknownSource { .. })));

    let mut twice = write(&args());
    twice.bytes.extend_from_slice(PLACEHOLDER.as_bytes());
    assert_eq!(
        store.fill(&twice),
        Err(FillError::Placeholder { label: "provider headers".into(), count: 2 })
    );
}

#[test]
fn passes_plain_writes_through_and_refuses_paths_outside_home() {
    let store = CredentialStore::new("/nonexistent", vec![]);
    let plain = NativeWrite::new("ack", b"{}\n".to_vec());
    assert_eq!(store.fill(&plain).unwrap(), b"{}\n");

    let home = home_with(&serde_json::json!({}));
    let mut escape = source();
    escape.file = "../etc/passwd".into();
    let store = CredentialStore::new(home.path(), vec![escape]);
    let fallback = write(&args()).secret.unwrap().fallback;
    assert_eq!(store.fill(&write(&args())).unwrap(), fallback);
}

#[test]
fn decrypts_aes_gcm_values_with_the_variable_or_the_machine_seed() {
    let machine = Machine::current("/home/someone");
    let seed = format!("seed:{}:/home/someone:{}", machine.platform, machine.user);
    let by_seed = encrypt(&seed, "sk-from-seed");
    let forms = encodings("ZCODE_ACP_TEST_UNSET_KEY");
    assert_eq!(decode(&by_seed, &forms, &machine).unwrap(), "sk-from-seed");

    // SAFETY: this variable is read only by this test.
    unsafe { std::env::set_var("ZCODE_ACP_TEST_CREDENTIAL_SECRET", "let me in") };
    let by_variable = encrypt("let me in", "sk-from-variable");
    let forms = encodings("ZCODE_ACP_TEST_CREDENTIAL_SECRET");
    assert_eq!(decode(&by_variable, &forms, &machine).unwrap(), "sk-from-variable");
    // With the variable set, the seed is not the key any more.
    assert!(matches!(decode(&by_seed, &forms, &machine), Err(Unavailable::Undecryptable)));

    // The variable counts trimmed; one of blanks only is no key, and the seed is used.
    // SAFETY: these variables are read only by this test.
    unsafe { std::env::set_var("ZCODE_ACP_TEST_PADDED_SECRET", "  let me in\n") };
    let forms = encodings("ZCODE_ACP_TEST_PADDED_SECRET");
    assert_eq!(decode(&by_variable, &forms, &machine).unwrap(), "sk-from-variable");
    unsafe { std::env::set_var("ZCODE_ACP_TEST_BLANK_SECRET", " \t") };
    let forms = encodings("ZCODE_ACP_TEST_BLANK_SECRET");
    assert_eq!(decode(&by_seed, &forms, &machine).unwrap(), "sk-from-seed");
}

#[test]
fn unreadable_and_undeclared_forms_are_never_passed_on() {
    let machine = Machine::current("/home/someone");
    let forms = encodings("ZCODE_ACP_TEST_UNSET_KEY");
    for stored in ["enc:v2:opaque", "enc:v1:not.base64!.x", "enc:v1:onlyonepart"] {
        assert!(decode(stored, &forms, &machine).is_err(), "{stored}");
    }
    // A contract that lists no clear form takes nothing as is.
    let only_encrypted = vec![forms[0].clone()];
    assert!(decode("sk-plain", &only_encrypted, &machine).is_err());
}

#[test]
fn no_credential_value_reaches_a_log() {
    let secret = "sk-never-logged-7f3a";
    let home = home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": secret,
    }));
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || Sink(writer.clone()))
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let store = CredentialStore::new(home.path(), vec![source()]);
        let bytes = store.fill(&write(&args())).unwrap();
        assert!(String::from_utf8(bytes).unwrap().contains(secret));
        store.fill(&write(&[("family", "bigmodel")])).unwrap();
    });
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("credential filled"), "{logged}");
    assert!(!logged.contains(secret) && !logged.contains("u42"), "{logged}");
}

struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn plan_home(key: &str) -> tempfile::TempDir {
    home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": key,
    }))
}

#[test]
fn presence_says_whether_a_credential_is_readable_and_never_its_value() {
    let key_env = "ZCODE_ACP_TEST_PRESENCE_KEY";
    // SAFETY: only this test reads or writes this variable.
    unsafe { std::env::set_var(key_env, "machine-secret") };
    let mut source = source();
    source.encodings = encodings(key_env);
    let sealed = encrypt("machine-secret", "the-key");
    let wrong = encrypt("another-secret", "the-key");
    let args: Vec<(String, String)> =
        args().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let cases = [
        (plan_home("plain-key"), Presence::Present),
        (plan_home(&sealed), Presence::Present),
        (plan_home(&wrong), Presence::Unreadable(Unavailable::Undecryptable.to_string())),
        (plan_home("enc:v2:opaque"), Presence::Unreadable("enc".into())),
        (tempfile::tempdir().unwrap(), Presence::Absent),
        (home_with(&serde_json::json!({"other": "x"})), Presence::Absent),
    ];
    for (home, expected) in cases {
        let store = CredentialStore::new(home.path(), vec![source.clone()]);
        assert_eq!(store.presence("plan-key", &args), expected);
    }
}

#[test]
fn an_unreadable_form_is_named_by_its_prefix() {
    let mut source = source();
    source.encodings =
        vec![CredentialEncoding::Unreadable("enc:v2:".into()), CredentialEncoding::Plain];
    let args: Vec<(String, String)> =
        args().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let home = plan_home("enc:v2:opaque");
    let store = CredentialStore::new(home.path(), vec![source]);
    assert_eq!(store.presence("plan-key", &args), Presence::Unreadable("enc:v2".into()));
}

#[test]
fn session_facts_read_user_files_and_presence_but_no_credential_value() {
    use zcode_contract::{FactKind, FactSource, FactValue, JsonFact, PresenceFact};
    let home = plan_home("the-secret-key");
    std::fs::write(
        home.path().join(".zcode/v2/setting.json"),
        r#"{"providerFamilyDomain":"bigmodel","big":[1,2]}"#,
    )
    .unwrap();
    let fact = |name: &str, kind| FactSource { name: name.into(), kind };
    let json = |file: &str, pointer: &str| JsonFact { file: file.into(), pointer: pointer.into() };
    let sources = vec![
        fact("revision", FactKind::InstallJson(json("table", "/revision"))),
        fact("family", FactKind::UserJson(json(".zcode/v2/setting.json", "/providerFamilyDomain"))),
        fact("none", FactKind::UserJson(json(".zcode/v2/setting.json", "/absent"))),
        fact("nofile", FactKind::UserJson(json(".zcode/v2/missing.json", ""))),
        fact(
            "key",
            FactKind::CredentialPresence(PresenceFact {
                source: "plan-key".into(),
                args: args().iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            }),
        ),
    ];
    let install = vec![("revision".to_string(), FactValue::Json("31".into()))];
    let store = CredentialStore::new(home.path(), vec![source()]);
    let facts = SessionFacts::new(home.path(), install, sources, store).read();
    assert_eq!(
        facts,
        vec![
            ("revision".to_string(), FactValue::Json("31".into())),
            ("family".to_string(), FactValue::Json("\"bigmodel\"".into())),
            ("none".to_string(), FactValue::Json("null".into())),
            ("nofile".to_string(), FactValue::Json("null".into())),
            ("key".to_string(), FactValue::Presence(Presence::Present)),
        ]
    );
    assert!(!format!("{facts:?}").contains("the-secret-key"));
}
