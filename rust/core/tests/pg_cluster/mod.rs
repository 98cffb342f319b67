//! A throwaway PostgreSQL cluster for cargo tests: one per test binary, started by
//! the first test that asks for it, stopped when the test binary exits; a fresh
//! database per test. The Python suite has the same in `lossless.testing.postgres`.
//!
//! `initdb` and `pg_ctl` on a temporary directory; the server listens on a free
//! 127.0.0.1 port and on a Unix socket in that directory. The administrator is
//! trusted; the application's role logs in with a password. Under root (where
//! `initdb` refuses to run) the server runs as the `postgres` system user, or
//! `nobody`. The test harness has no hook at exit, so a watchdog shell stops the
//! server and removes its directory once this process is gone, however it ended.
#![allow(dead_code)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

pub const ADMIN: &str = "lossless_admin";
pub const USER: &str = "lossless";
const SERVER_USERS: [&str; 2] = ["postgres", "nobody"];

pub struct Cluster {
    pub root: PathBuf,
    pub bindir: PathBuf,
    pub port: u16,
    pub password: String,
    run_as: Option<String>,
    databases: AtomicU32,
}

/// The test binary's cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::start)
}

/// A database made for one test, dropped when the test is done with it.
pub struct Database {
    pub name: String,
}

impl Database {
    /// The application role's URL over TCP, with its password.
    pub fn url(&self) -> String {
        cluster().url(&self.name, &cluster().password)
    }

    /// The same with another password.
    pub fn url_with_password(&self, password: &str) -> String {
        cluster().url(&self.name, password)
    }

    /// The administrator's URL over the Unix socket (trusted).
    pub fn admin_url(&self) -> String {
        cluster().admin_url(&self.name)
    }

    /// A connection as the administrator.
    pub fn admin(&self) -> postgres::Client {
        postgres::Client::connect(&self.admin_url(), postgres::NoTls).expect("admin connection")
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = cluster().sql(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.name
        ));
    }
}

/// A fresh, empty database owned by the application's role.
pub fn database() -> Database {
    let cluster = cluster();
    let number = cluster.databases.fetch_add(1, Ordering::Relaxed);
    let name = format!("test_{}_{number}", std::process::id());
    cluster
        .sql(&format!("CREATE DATABASE \"{name}\" OWNER \"{USER}\""))
        .expect("create a database");
    Database { name }
}

impl Cluster {
    fn start() -> Self {
        let bindir = find_bindir();
        let root = tempfile::Builder::new()
            .prefix("lossless-pg-")
            .tempdir()
            .expect("temporary directory")
            .keep();
        std::fs::create_dir(root.join("socket")).expect("socket directory");
        let run_as = server_user();
        if let Some(user) = &run_as {
            run(Command::new("chown").args(["-R", user]).arg(&root));
        }
        let password = format!("pw{:x}{:x}", std::process::id(), nanos());
        let mut cluster = Self {
            root,
            bindir,
            port: 0,
            password,
            run_as,
            databases: AtomicU32::new(0),
        };
        cluster.init();
        cluster.watch();
        cluster.serve();
        cluster
            .sql(&format!(
                "CREATE ROLE \"{USER}\" LOGIN PASSWORD '{}'",
                cluster.password
            ))
            .expect("create the application's role");
        cluster
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.root.join("socket")
    }

    pub fn url(&self, database: &str, password: &str) -> String {
        format!(
            "postgresql://{USER}:{password}@127.0.0.1:{}/{database}",
            self.port
        )
    }

    pub fn admin_url(&self, database: &str) -> String {
        format!(
            "postgresql://{ADMIN}@/{database}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// Runs `sql` as the administrator in the `postgres` database.
    pub fn sql(&self, sql: &str) -> Result<(), postgres::Error> {
        let mut admin = postgres::Client::connect(&self.admin_url("postgres"), postgres::NoTls)?;
        admin.batch_execute(sql)
    }

    fn init(&self) {
        let data = self.data_dir();
        self.server_command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", ADMIN, "-A", "trust", "-E", "UTF8"])
            .args(["--no-locale", "--no-sync", "--no-instructions"])
            .status_ok("initdb");
        let settings = format!(
            "listen_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n\
             max_connections = 200\nlog_min_messages = warning\n",
            self.socket_dir().display()
        );
        append(&data.join("postgresql.conf"), &settings);
        let hba = format!(
            "local all {USER} scram-sha-256\nhost all {USER} 127.0.0.1/32 scram-sha-256\n\
             local all all trust\nhost all all 127.0.0.1/32 trust\n"
        );
        std::fs::write(data.join("pg_hba.conf"), hba).expect("pg_hba.conf");
    }

    fn serve(&mut self) {
        // A port free now may be taken before the server binds it: try a few.
        for attempt in 0..3 {
            self.port = free_port();
            let started = self
                .server_command("pg_ctl")
                .arg("-D")
                .arg(self.data_dir())
                .arg("-l")
                .arg(self.root.join("server.log"))
                .args([
                    "-o",
                    &format!("-p {}", self.port),
                    "-t",
                    "60",
                    "-w",
                    "start",
                ])
                .status()
                .is_ok_and(|status| status.success());
            if started {
                return;
            }
            assert!(
                attempt < 2,
                "pg_ctl start failed: see {}",
                self.root.display()
            );
        }
    }

    /// Stops the server and removes its directory once this process has exited.
    #[expect(
        clippy::zombie_processes,
        reason = "the watchdog outlives this process on purpose: it cleans up after it"
    )]
    fn watch(&self) {
        let pg_ctl = self.bindir.join("pg_ctl");
        let stop = match &self.run_as {
            Some(user) => format!("runuser -u {user} -- '{}'", pg_ctl.display()),
            None => format!("'{}'", pg_ctl.display()),
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.2; done; \
             {stop} -D '{data}' -m immediate -w stop; rm -rf '{root}'",
            pid = std::process::id(),
            data = self.data_dir().display(),
            root = self.root.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("watchdog");
    }

    fn server_command(&self, name: &str) -> Command {
        let program = self.bindir.join(name);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        };
        // The server's user may not be able to enter the caller's directory.
        command.current_dir(&self.root).stdin(Stdio::null());
        command
    }
}

trait StatusOk {
    fn status_ok(&mut self, what: &str);
}

impl StatusOk for Command {
    fn status_ok(&mut self, what: &str) {
        let out = self.output().unwrap_or_else(|err| panic!("{what}: {err}"));
        assert!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn run(command: &mut Command) {
    command.status_ok("command");
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for appending");
    file.write_all(text.as_bytes()).expect("append");
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    probe.local_addr().expect("its address").port()
}

/// Who the server runs as: this user, unless this is root.
fn server_user() -> Option<String> {
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    if !root {
        return None;
    }
    let found = SERVER_USERS.into_iter().find(|user| {
        Command::new("id")
            .arg(user)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    });
    Some(
        found
            .expect("initdb refuses to run as root, and neither postgres nor nobody exists")
            .to_string(),
    )
}

/// The directory of the server binaries: `LOSSLESS_PG_BINDIR`, `pg_config
/// --bindir`, or the newest of Debian's `/usr/lib/postgresql/<version>/bin`.
fn find_bindir() -> PathBuf {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("LOSSLESS_PG_BINDIR") {
        candidates.push(dir.into());
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            candidates.push(String::from_utf8_lossy(&out.stdout).trim().into());
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|version| std::cmp::Reverse(version.0));
    candidates.extend(versions.into_iter().map(|(_, dir)| dir));
    candidates
        .into_iter()
        .find(|dir| {
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|bin| dir.join(bin).is_file())
        })
        .expect(
            "the PostgreSQL server binaries were not found: scripts/setup installs them as \
             root (apt-get install postgresql); otherwise set LOSSLESS_PG_BINDIR",
        )
}
