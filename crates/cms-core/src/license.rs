//! Licenses: plan features and expiry, optionally signed with Ed25519.

use ring::signature::{ED25519, UnparsedPublicKey};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::codec::{self, YamlLimits};
use crate::error::{CoreError, CoreResult};

/// Plan features a license can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    JsonApi,
    ThemeCustomization,
    Webhooks,
    /// The AI-agent endpoint `/mcp`.
    Mcp,
}

impl Feature {
    /// Every feature, in the order they are listed to people.
    pub const ALL: [Self; 4] = [Self::JsonApi, Self::ThemeCustomization, Self::Webhooks, Self::Mcp];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonApi => "json_api",
            Self::ThemeCustomization => "theme_customization",
            Self::Webhooks => "webhooks",
            Self::Mcp => "mcp",
        }
    }

    /// A feature by its name; else `Err` with the feature it was probably meant to be.
    pub fn parse(name: &str) -> Result<Self, Option<Self>> {
        if let Some(feature) = Self::ALL.into_iter().find(|f| f.as_str() == name) {
            return Ok(feature);
        }
        // The same letters in another case or with other separators, else one or two typos.
        let plain = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
        let near = Self::ALL
            .into_iter()
            .find(|f| plain(f.as_str()) == plain(name))
            .or_else(|| Self::ALL.into_iter().find(|f| edit_distance(f.as_str(), &name.to_lowercase()) <= 2));
        Err(near)
    }

    /// The names, comma-separated: `json_api, theme_customization, webhooks, mcp`.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// Why `name` is not a feature, for people: the likely one and the known ones.
    fn unknown(name: &str, near: Option<Self>) -> String {
        let guess = near.map(|f| format!(" (did you mean {}?)", f.as_str())).unwrap_or_default();
        format!("unknown feature {name:?}{guess}; the features are: {}", Self::names())
    }
}

/// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The license file, `.cms/license.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct License {
    pub licensee: String,
    pub features: Vec<String>,
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Hex Ed25519 signature of [`License::signed_message`].
    #[serde(default)]
    pub signature: Option<String>,
}

impl License {
    pub fn from_yaml(text: &str) -> CoreResult<Self> {
        let license: Self = codec::from_yaml(text, YamlLimits::STATE)
            .map_err(|e| CoreError::invalid(format!("license file is not valid: {e}")))?;
        license.expiry()?;
        Ok(license)
    }

    /// `Err` naming each feature of the file that this program does not know (with the
    /// likely one and the known ones): a misspelt feature would otherwise be carried and
    /// ignored. Installing checks it; reading does not, so that a license from a later
    /// version still opens the features this one knows.
    pub fn check_features(&self) -> CoreResult<()> {
        let unknown: Vec<String> = self
            .features
            .iter()
            .filter_map(|name| Feature::parse(name).err().map(|near| Feature::unknown(name, near)))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(CoreError::invalid(format!("the license lists an {}", unknown.join("; and an "))))
    }

    /// The exact bytes a license signature covers: one `key=value` line per field.
    pub fn signed_message(&self) -> String {
        format!(
            "licensee={}\nfeatures={}\nexpires_at={}\n",
            self.licensee,
            self.features.join(","),
            self.expires_at.as_deref().unwrap_or("")
        )
    }

    pub fn expiry(&self) -> CoreResult<Option<OffsetDateTime>> {
        self.expires_at
            .as_deref()
            .map(|raw| {
                OffsetDateTime::parse(raw, &Rfc3339).map_err(|_| {
                    CoreError::invalid(format!(
                        "license expires_at must be an RFC 3339 date-time, got {raw:?}"
                    ))
                })
            })
            .transpose()
    }

    /// Checks the signature against a hex Ed25519 public key.
    pub fn verify(&self, public_key_hex: &str) -> CoreResult<()> {
        let public_key = hex::decode(public_key_hex)
            .map_err(|_| CoreError::invalid("license.public_key in cms.yaml is not hex"))?;
        let signature = self
            .signature
            .as_deref()
            .ok_or_else(|| {
                CoreError::invalid("the license is not signed, but cms.yaml requires a signed license")
            })
            .and_then(|s| {
                hex::decode(s).map_err(|_| CoreError::invalid("the license signature is not hex"))
            })?;
        UnparsedPublicKey::new(&ED25519, public_key)
            .verify(self.signed_message().as_bytes(), &signature)
            .map_err(|_| CoreError::invalid("the license signature does not verify"))
    }
}

/// What the server currently holds as its license.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LicenseState {
    Missing,
    /// Present but unusable (bad signature, unreadable); the reason is for operators.
    Invalid(String),
    Expired(License),
    Active(License),
}

impl LicenseState {
    pub fn evaluate(license: Option<License>, public_key: Option<&str>, now: OffsetDateTime) -> Self {
        let Some(license) = license else { return Self::Missing };
        if let Some(key) = public_key
            && let Err(e) = license.verify(key)
        {
            return Self::Invalid(e.to_string());
        }
        match license.expiry() {
            Err(e) => Self::Invalid(e.to_string()),
            Ok(Some(expiry)) if expiry <= now => Self::Expired(license),
            Ok(_) => Self::Active(license),
        }
    }

    pub fn has(&self, feature: Feature) -> bool {
        matches!(self, Self::Active(l) if l.features.iter().any(|f| f == feature.as_str()))
    }

    /// `Ok` when the license is active and carries `feature`; else a message for the client
    /// that says what is wrong and what fixes it.
    pub fn require(&self, feature: Feature) -> CoreResult<()> {
        match self.lacks(feature) {
            None => Ok(()),
            Some(why) => Err(CoreError::PaymentRequired(format!(
                "{why}; this route needs an active license with the {} feature. {}",
                feature.as_str(),
                self.remedy(feature)
            ))),
        }
    }

    /// What the site's owner does so that `feature` may be used, in one sentence naming the
    /// command.
    pub fn remedy(&self, feature: Feature) -> String {
        let example = format!("licensee: NAME and features: [{}]", Feature::names());
        match self {
            Self::Missing => format!(
                "The site's owner installs one with `cms license install FILE`, FILE being a YAML file with {example} (`cms init` writes one for a new site)."
            ),
            Self::Invalid(_) => {
                "The site's owner installs a valid one with `cms license install FILE`.".to_owned()
            }
            Self::Expired(_) => {
                "The site's owner installs a current one with `cms license install FILE`.".to_owned()
            }
            Self::Active(license) => {
                let typo = license
                    .features
                    .iter()
                    .find(|name| Feature::parse(name) == Err(Some(feature)))
                    .map(|name| format!(" (it lists {name:?}: did you mean {}?)", feature.as_str()))
                    .unwrap_or_default();
                format!(
                    "The site's owner adds {} to the license's features{typo} and installs it again with `cms license install FILE`.",
                    feature.as_str()
                )
            }
        }
    }

    /// Why `feature` may not be used now (`None` when it may): no license, an invalid or
    /// expired one, or one without the feature.
    pub fn lacks(&self, feature: Feature) -> Option<String> {
        if self.has(feature) {
            return None;
        }
        Some(match self {
            Self::Missing => "no license is installed".to_owned(),
            Self::Invalid(reason) => format!("the license is not valid ({reason})"),
            Self::Expired(l) => format!("the license expired at {}", l.expires_at.as_deref().unwrap_or("?")),
            Self::Active(_) => format!("the license does not include the {} feature", feature.as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{Ed25519KeyPair, KeyPair};
    use time::macros::datetime;

    fn license(features: &[&str], expires_at: Option<&str>) -> License {
        License {
            licensee: "Demo".into(),
            features: features.iter().map(|f| (*f).to_owned()).collect(),
            expires_at: expires_at.map(str::to_owned),
            signature: None,
        }
    }

    #[test]
    fn features_and_expiry() {
        let now = datetime!(2026-01-01 0:00 UTC);
        let active =
            LicenseState::evaluate(Some(license(&["json_api"], Some("2027-01-01T00:00:00Z"))), None, now);
        assert!(active.require(Feature::JsonApi).is_ok());
        assert!(active.require(Feature::Webhooks).unwrap_err().to_string().contains("webhooks"));
        let expired =
            LicenseState::evaluate(Some(license(&["json_api"], Some("2025-01-01T00:00:00Z"))), None, now);
        assert!(expired.require(Feature::JsonApi).unwrap_err().to_string().contains("expired"));
        assert!(LicenseState::evaluate(None, None, now).require(Feature::JsonApi).is_err());
    }

    #[test]
    fn signatures() {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let public = hex::encode(pair.public_key().as_ref());
        let mut signed = license(&["json_api"], None);
        signed.signature = Some(hex::encode(pair.sign(signed.signed_message().as_bytes()).as_ref()));
        let now = datetime!(2026-01-01 0:00 UTC);
        assert!(LicenseState::evaluate(Some(signed.clone()), Some(&public), now).has(Feature::JsonApi));
        let mut tampered = signed.clone();
        tampered.features.push("webhooks".into());
        assert!(matches!(
            LicenseState::evaluate(Some(tampered), Some(&public), now),
            LicenseState::Invalid(_)
        ));
        let unsigned = license(&["json_api"], None);
        assert!(matches!(
            LicenseState::evaluate(Some(unsigned), Some(&public), now),
            LicenseState::Invalid(_)
        ));
    }

    /// A misspelt feature is refused with the known names and the likely one; a license
    /// that parses but lacks a feature says so.
    #[test]
    fn unknown_features_are_named_with_the_known_ones() {
        let message = license(&["jsonapi", "webhooks"], None).check_features().unwrap_err().to_string();
        assert!(message.contains("\"jsonapi\"") && message.contains("did you mean json_api?"), "{message}");
        assert!(message.contains("json_api, theme_customization, webhooks, mcp"), "{message}");
        let message = license(&["gold"], None).check_features().unwrap_err().to_string();
        assert!(!message.contains("did you mean"), "{message}");
        assert!(license(&["json_api", "mcp"], None).check_features().is_ok());
        assert_eq!(Feature::parse("Theme-Customization"), Err(Some(Feature::ThemeCustomization)));
        assert_eq!(Feature::parse("mcp"), Ok(Feature::Mcp));
    }

    /// The refusal (the 402 of every route) says what fixes it.
    #[test]
    fn a_refusal_names_the_fix() {
        let now = datetime!(2026-01-01 0:00 UTC);
        let missing =
            LicenseState::evaluate(None, None, now).require(Feature::JsonApi).unwrap_err().to_string();
        assert!(
            missing.contains("no license is installed") && missing.contains("cms license install"),
            "{missing}"
        );
        let typo = LicenseState::evaluate(Some(license(&["jsonapi"], None)), None, now);
        let message = typo.require(Feature::JsonApi).unwrap_err().to_string();
        assert!(
            message.contains("did you mean json_api?") && message.contains("cms license install"),
            "{message}"
        );
    }

    #[test]
    fn parses_the_file() {
        let l = License::from_yaml(
            "licensee: Demo\nfeatures: [json_api, webhooks]\nexpires_at: 2030-01-01T00:00:00Z\n",
        )
        .unwrap();
        assert_eq!(l.features, ["json_api", "webhooks"]);
        assert!(License::from_yaml("licensee: D\nfeatures: []\nexpires_at: soon\n").is_err());
        assert!(License::from_yaml("licensee: D\nfeatures: []\nplan: gold\n").is_err());
    }
}
