import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Creates SCRAM users and ACLs through the Admin API in one JVM (librdkafka's admin has neither call).
 * Reads them from stdin, so passwords never appear on a command line:
 *   user <name> <password>
 *   acl <principal> <operation> <resourceType> <patternType> <name>
 * Usage: java -cp <kafka libs> SecurityAdmin.java <admin client properties> <bootstrap>
 */
public class SecurityAdmin {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    try (FileInputStream in = new FileInputStream(args[0])) {
      props.load(in);
    }
    props.setProperty("bootstrap.servers", args[1]);
    List<UserScramCredentialAlteration> users = new ArrayList<>();
    List<AclBinding> acls = new ArrayList<>();
    BufferedReader reader = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = reader.readLine()) != null; ) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 3 && f[0].equals("user")) {
        users.add(new UserScramCredentialUpsertion(f[1], new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), f[2]));
      } else if (f.length == 6 && f[0].equals("acl")) {
        ResourcePattern resource = new ResourcePattern(ResourceType.fromString(f[3]), f[5], PatternType.fromString(f[4]));
        acls.add(new AclBinding(resource, new AccessControlEntry(f[1], "*", AclOperation.fromString(f[2]), AclPermissionType.ALLOW)));
      } else if (!line.isBlank()) {
        // The line may hold a password: name only its kind.
        throw new IllegalArgumentException("unreadable input line starting with " + f[0]);
      }
    }
    try (Admin admin = Admin.create(props)) {
      if (!users.isEmpty()) admin.alterUserScramCredentials(users).all().get();
      if (!acls.isEmpty()) admin.createAcls(acls).all().get();
    }
    System.out.println("applied " + users.size() + " user(s) and " + acls.size() + " ACL(s)");
  }
}
